"""The LLM helpers a save may consult, held by the engine (:meth:`remd.engine.Engine.service`):
the tagger (``[tags] llm``) and the update judge (``[updates] llm``). Each is made on first use,
on its own client; with the switch on and no ``[llm] base_url`` there is none, which is logged
once per engine (saves keep the offline tagger and detector)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from remd.config import Config
from remd.llm.judge import LLMUpdateJudge
from remd.llm.tagger import LLMTagger
from remd.logs import get_logger

if TYPE_CHECKING:
    from remd.parts import Parts

_log = get_logger("remd.engine")


def _make_tagger(config: Config) -> LLMTagger | None:
    cfg, llm = config.tags, config.llm
    if cfg.llm and llm.base_url is None:
        _log.warning("tagging.no_llm", detail="[tags] llm is on but [llm] base_url is not set: "
                     "the offline tagger tags every memory")
    elif cfg.llm:
        return LLMTagger.from_settings(llm, max_tags=cfg.max_tags, timeout=cfg.llm_timeout,
                                       cooldown=cfg.llm_cooldown)
    return None


def _make_judge(config: Config) -> LLMUpdateJudge | None:
    cfg, llm = config.updates, config.llm
    if cfg.llm and llm.base_url is None:
        _log.warning("updates.no_llm", detail="[updates] llm is on but [llm] base_url is not "
                     "set: the offline detector decides alone")
    elif cfg.llm:
        return LLMUpdateJudge.from_settings(llm, timeout=cfg.llm_timeout,
                                            cooldown=cfg.llm_cooldown)
    return None


def tagger_of(engine: Parts) -> LLMTagger | None:
    """The engine's LLM tagger; None when ``[tags] llm`` is off or no LLM is configured."""
    return engine.service("tagger", _make_tagger)


def judge_of(engine: Parts) -> LLMUpdateJudge | None:
    """The engine's LLM update judge; None when ``[updates] llm`` is off or no LLM is
    configured."""
    return engine.service("update_judge", _make_judge)
