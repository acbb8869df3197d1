"""The shipped systemd unit, example config and environment file.

`systemd-analyze verify` checks the unit (any output counts as a failure: it exits 0 on
warnings). systemd/remd.toml must document every config key with its default, so it is checked
against :class:`remd.config.Config`; regenerate it after adding a key with
``python tests/service/test_systemd.py > systemd/remd.toml``.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import subprocess
import sys
import tomllib
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from remd.config import Config, load_config
from remd.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "systemd" / "remd.service"
TOML = ROOT / "systemd" / "remd.toml"
ENV = ROOT / "systemd" / "remd.env"
CLI_VARIABLES = {"REMD_DB", "REMD_CONFIG", "REMD_NAMESPACE"}

SECTION_DOCS = {
    "store": "The SQLite file: locking, the connection pool and input limits.",
    "engine": "One engine per file per process: the memory its in-process caches may hold.",
    "embed": "Embeddings: the offline MiniLM model by default (nothing is downloaded).",
    "tags": "Tags extracted from each memory at write time.",
    "inject": "Building a token-budgeted pack: tag-graph walk, vector and lexical seeds.",
    "importance": "importance = a*recency + b*access_freq + c*centrality + d*confidence "
                  "(weights sum to 1).",
    "triggers": "When the daemon starts a REM cycle in a namespace (any enabled trigger).",
    "rem": "The REM cycle: flagging, clustering and synthesis.",
    "llm": "An OpenAI-compatible endpoint for synthesis; unset base_url = offline synthesiser.",
    "daemon": "`remd serve`: scheduling, HTTP API, logs.",
}


# -- the example config, generated from the model ------------------------------------------------
def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def _choices(annotation: Any) -> str:
    """The allowed values of a Literal field (also inside Optional/tuple), for the comment."""
    if typing.get_origin(annotation) is typing.Literal:
        return " | ".join(json.dumps(a) for a in typing.get_args(annotation))
    for arg in typing.get_args(annotation):
        found = _choices(arg)
        if found:
            return found
    return ""


def render_toml() -> str:
    defaults = Config()
    out = ["# remd configuration: every key with its default value.",
           "# Precedence: this file (--config FILE or $REMD_CONFIG), then REMD_SECTION__KEY",
           "# environment variables (e.g. REMD_LLM__BASE_URL), then command-line flags.",
           "# Keys left commented out have no default (unset). Generated from remd.config;",
           "# tests/service/test_systemd.py checks that it matches the code."]
    for name in Config.model_fields:
        section: BaseModel = getattr(defaults, name)
        out += ["", f"# {SECTION_DOCS.get(name, name)}", f"[{name}]"]
        for key, field in type(section).model_fields.items():
            notes = [n for n in (field.description, _choices(field.annotation)) if n]
            if "secret" in str(field.annotation).lower():
                notes.append("secret: prefer the environment variable "
                             f"REMD_{name.upper()}__{key.upper()}")
            out += [f"# {n}" for n in notes]
            value = getattr(section, key)
            out.append(f"# {key} =" if value is None else f"{key} = {_toml_value(value)}")
    return "\n".join(out) + "\n"


def test_example_config_documents_every_key_with_its_default() -> None:
    text = TOML.read_text(encoding="utf-8")
    assert load_config(TOML, env={}) == Config()  # the values are the defaults
    parsed = tomllib.loads(text)
    for name in Config.model_fields:
        section = getattr(Config(), name)
        for key in type(section).model_fields:
            documented = re.search(rf"^(# )?{re.escape(key)} =", text.split(f"[{name}]")[1]
                                   .split("\n[")[0], re.MULTILINE)
            assert documented, f"systemd/remd.toml lacks [{name}] {key}; regenerate it"
        for key in parsed.get(name, {}):
            assert key in type(section).model_fields, f"[{name}] {key} is not a config key"
    assert text == render_toml(), "systemd/remd.toml is stale: python tests/service/test_systemd.py"


def test_example_environment_file_is_valid() -> None:
    env: dict[str, str] = {}
    for line in ENV.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        assert sep and re.fullmatch(r"REMD_[A-Z0-9_]+", key), line
        env[key] = value
    config_vars = {k: v for k, v in env.items() if k not in CLI_VARIABLES}
    assert config_vars, "the example should show config overrides"
    # As shipped, the token is a placeholder the daemon refuses (docs/deployment.md: replace
    # it on install).
    with pytest.raises(ConfigError, match="example file's placeholder"):
        load_config(env=config_vars)
    config_vars["REMD_DAEMON__HTTP_TOKEN"] = secrets.token_hex(24)
    config = load_config(env=config_vars)
    assert config.daemon.http_address is not None
    assert config.daemon.http_address[0] == "127.0.0.1"


# -- the unit ----------------------------------------------------------------------------------
def unit_settings() -> dict[str, list[str]]:
    settings: dict[str, list[str]] = {}
    for line in UNIT.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key, []).append(value)
    return settings


def test_unit_has_the_required_settings() -> None:
    s = unit_settings()
    assert s["Type"] == ["notify"] and s["ExecStart"][0].startswith("/usr/bin/remd serve")
    assert s["Restart"] == ["on-failure"] and s["User"] == ["remd"]
    assert s["StateDirectory"] == ["remd"] and s["KillSignal"] == ["SIGTERM"]
    for key in ("NoNewPrivileges", "ProtectHome", "PrivateTmp"):
        assert s[key] == ["yes"], key
    assert s["ProtectSystem"] == ["strict"] and "/var/lib/remd" in s["ReadWritePaths"]
    assert set(s["RestrictAddressFamilies"][0].split()) == {"AF_UNIX", "AF_INET", "AF_INET6"}
    assert "TimeoutStopSec" in s and "WatchdogSec" in s
    assert int(s["LimitNOFILE"][0]) > 1024  # above systemd's default soft limit
    text = UNIT.read_text(encoding="utf-8")
    for key in ("KillSignal", "TimeoutStopSec", "LimitNOFILE"):  # each explained just above
        block = text.split(f"\n{key}=")[0].rsplit("\n\n", 1)[-1]
        assert "#" in block, f"{key} needs a comment saying why"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                    reason="systemd-analyze is not installed (apt-get install systemd)")
def test_systemd_analyze_verify_is_silent(tmp_path: Path) -> None:
    # verify fails when ExecStart's binary is missing: point it at this checkout's remd.
    remd = Path(sys.executable).parent / "remd"
    if not remd.exists():
        pytest.skip(f"no remd console script beside {sys.executable} (pip install -e .)")
    unit = tmp_path / "remd.service"
    unit.write_text(UNIT.read_text(encoding="utf-8").replace(
        "ExecStart=/usr/bin/remd", f"ExecStart={remd}"), encoding="utf-8")
    result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                            text=True, timeout=120)
    # verify exits 0 on unknown keys and bad values, with warnings: any output is a failure.
    assert result.returncode == 0 and result.stdout + result.stderr == "", result.stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                    reason="systemd-analyze is not installed (apt-get install systemd)")
def test_systemd_analyze_rates_the_hardening_ok(tmp_path: Path) -> None:
    unit = tmp_path / "remd.service"
    unit.write_text(UNIT.read_text(encoding="utf-8"), encoding="utf-8")
    result = subprocess.run(["systemd-analyze", "security", "--offline=yes", str(unit)],
                            capture_output=True, text=True, timeout=120)
    match = re.search(r"Overall exposure level for remd\.service: ([0-9.]+)", result.stdout)
    assert match, result.stdout + result.stderr
    assert float(match.group(1)) <= 2.0  # "OK" on systemd's scale (0 safe .. 10 exposed)


if __name__ == "__main__":
    sys.stdout.write(render_toml())
