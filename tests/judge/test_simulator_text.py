"""The judge simulator on AIR-Bench's text-only queries: chat score pairs, alignment letters."""

import pytest

from judge.simulator import SimulatorConfig
from scoring.kinds.airbench import rules as airbench
from scoring.kinds.airbench.simulated import align_letter, chat_score
from scoring.kinds.airbench.simulated import reply as text_reply
from tests.httpclient import HTTP
from tests.scoring.airbench_data import chat_meta, foundation_meta

MODEL = "Qwen3-Omni-30B-A3B-Instruct"


def body(text):
    return {"model": MODEL, "messages": [{"role": "user", "content": text}]}


def chat_query(response, round_):
    item = airbench.parse_chat(chat_meta())[0]
    return body(airbench.chat_pass_prompt(item, response, round_)), item


def test_a_chat_review_gets_two_scores_hashed_per_answer_whatever_its_position():
    config = SimulatorConfig(seed=4)
    (a, item), (b, _) = chat_query("A dog barks.", 0), chat_query("A dog barks.", 1)
    reply_a, recorded = text_reply(a, config)
    reply_b, _ = text_reply(b, config)
    mine, reference = chat_score("What 0?", "A dog barks.", 4), chat_score(
        "What 0?", item.answer_gt, 4)
    assert reply_a == f"{reference} {mine}" and reply_b == f"{mine} {reference}"
    assert airbench.parse_chat_reply(reply_a) == (reference, mine)
    assert recorded == ["What 0?", [item.answer_gt, "A dog barks."]]
    assert all(1 <= chat_score("q", str(n), 4) <= 10 for n in range(200))
    assert chat_score("What 0?", "A dog barks.", 5) != mine or \
        chat_score("What 0?", "A cat.", 4) != mine  # the hash moves with seed and answer


def test_an_alignment_query_gets_a_letter_among_its_options():
    item = airbench.parse_foundation(foundation_meta())[2]  # binary
    prompt = airbench.alignment_prompt(item.question, "I hear a man\nA. maybe", item.choices)
    letter, recorded = text_reply(body(prompt), SimulatorConfig(seed=1))
    assert letter == align_letter(item.question, "I hear a man\nA. maybe", 2, 1)
    assert letter in "AB" and recorded == [item.question, ["female", "male"]]
    assert airbench.parse_alignment(letter, 2) == letter


def test_other_text_gets_no_text_reply():
    assert text_reply(body("hello"), SimulatorConfig()) is None


@pytest.mark.parametrize("garbage", ["0", "1"])
def test_the_server_answers_text_queries_and_fails_them_on_request(simulator_factory, garbage):
    sim = simulator_factory("--latency-ms", "1", "--seed", "4", "--garbage-rate", garbage)
    query, item = chat_query("A dog barks.", 0)
    replies = [HTTP.post(f"{sim.urls[0]}/v1/chat/completions", json=query, timeout=30).json()
               for _ in range(4)]
    texts = [r["choices"][0]["message"]["content"] for r in replies]
    assert all(r["system_fingerprint"] == "judge-simulator" for r in replies)
    if garbage == "0":
        expected = f"{chat_score('What 0?', item.answer_gt, 4)} " \
                   f"{chat_score('What 0?', 'A dog barks.', 4)}"
        assert texts == [expected] * 4
    else:
        for text in texts:
            with pytest.raises(ValueError):
                airbench.parse_chat_reply(text)
