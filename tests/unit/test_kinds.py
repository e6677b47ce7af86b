"""Every list of memory kinds is the registry's (`memory/core/kinds.py`): a kind added there
reaches the write path, compaction, dreaming, MEMORY.md, the CLI and the chat commands."""

from __future__ import annotations

import json

import pytest

from nahida import memory
from nahida.memory.core import kinds
from nahida.memory.dream import prompt as dream_prompt
from nahida.memory.dream import proposals
from nahida.memory.history import compress
from nahida.memory.markdown import memory_md
from nahida.memory.write import candidates, proposed, write


def test_every_list_of_kinds_comes_from_the_registry() -> None:
    assert tuple(k.name for k in kinds.REGISTRY) == kinds.KINDS
    assert memory.KINDS is kinds.KINDS  # the CLI and the chat commands read it from the facade
    assert candidates.KINDS is kinds.KINDS
    assert proposed.KINDS is kinds.KINDS
    assert write.SAFE_KINDS is kinds.SAFE_KINDS
    assert compress.FACT_KINDS is kinds.SAFE_KINDS
    assert memory_md.GROUPS is kinds.HEADINGS
    assert set(kinds.SAFE_KINDS) | set(kinds.DREAMED_KINDS) | set(kinds.HEADINGS) <= set(
        kinds.KINDS
    )
    assert kinds.DEFAULT in kinds.SAFE_KINDS


def test_the_prompts_name_the_registrys_kinds() -> None:
    system = compress.roll_request("s", person=None, sections=("a",))[0].content
    for kind in kinds.KINDS:
        assert (f'"{kind}"' in dream_prompt.SYSTEM) == (kind in kinds.DREAMED_KINDS), kind
        assert (kind in system.split('"kind": "')[1].split('"')[0]) == (kind in kinds.SAFE_KINDS)


@pytest.mark.parametrize("kind", kinds.KINDS)
def test_a_dream_may_propose_exactly_the_dreamed_kinds(kind: str) -> None:
    op = {"op": "add", "kind": kind, "content": "x", "scope": "user:onebot:1"}
    answer = {"ops": [{**op, "evidence": ["t1"], "confidence": 0.9}]}
    if kind in kinds.DREAMED_KINDS:
        assert proposals.read(json.dumps(answer))[0].kind == kind
    else:
        with pytest.raises(proposals.Malformed):
            proposals.read(json.dumps(answer))
