"""Relace's documented sampling (temperature 1.0, top_k 100, top_p 0.95) for model policies given
Relace's tool set, unless the spec sets a value; greedy for the others. Requests go to a real HTTP
server on 127.0.0.1 that records their bodies."""

from __future__ import annotations

import pytest
from servers import recording_chat_server

from fasbench.harness import Limits, run_episode
from fasbench.policies import make_policy
from fasbench.policies.sampling import RELACE_SAMPLING, sampling_for
from fasbench.policies.toy import make_corpus, toy_tasks
from fasbench.tools import make_toolset


@pytest.fixture()
def recorder():
    with recording_chat_server({"content": "nothing to call"}) as (url, bodies):
        yield url, bodies


def _first_body(url, bodies, spec_extra, toolset, task):
    bodies.clear()
    pol = make_policy(f"openai:model=m,base_url={url},api_key_env=,retries=0{spec_extra}")
    run_episode(task, pol, toolset, Limits(max_turns=1))
    return bodies[0]


def test_openai_policy_samples_as_relace_documents_for_its_tool_set(recorder, tmp_path):
    url, bodies = recorder
    task = toy_tasks(make_corpus(tmp_path))[0]
    b = _first_body(url, bodies, "", "relace", task)
    assert (b["temperature"], b["top_p"]) == (1.0, 0.95) and "top_k" not in b  # top_k: only when asked for
    b = _first_body(url, bodies, ",top_k=100", "relace", task)
    assert b["top_k"] == 100
    b = _first_body(url, bodies, ",temperature=0.0", "relace", task)  # the spec wins
    assert b["temperature"] == 0.0
    b = _first_body(url, bodies, "", "fastcontext", task)  # another tool set: greedy, nothing else sent
    assert b["temperature"] == 0.0 and "top_p" not in b and "top_k" not in b


def test_resolution_for_the_hf_policy(tmp_path):
    rel = make_toolset("relace", tmp_path).schemas
    fc = make_toolset("fastcontext", tmp_path).schemas
    assert RELACE_SAMPLING == {"temperature": 1.0, "top_k": 100, "top_p": 0.95}
    assert sampling_for(rel, None, None, None) == (1.0, 0.95, 100)
    assert sampling_for(rel, 0.0, None, 0) == (0.0, 0.95, None)
    assert sampling_for(fc, None, None, None) == (0.0, None, None)
    assert sampling_for([], None, None, None) == (0.0, None, None)  # a judge: no tools
