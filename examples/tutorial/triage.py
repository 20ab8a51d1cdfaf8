"""The tutorial's python scorer: is the ticket's "category" field the expected one?

evalwh calls category(output, case) once per answer: output is the model's reply (a str),
case has .id, .vars, .expected and .metadata. Return a bool, a number in [0, 1], or a dict
with "score" (and optionally "passed", "details", "rationale").
"""

import json


def category(output, case):
    start, end = output.find("{"), output.rfind("}")
    try:
        answer = json.loads(output[start : end + 1]) if start >= 0 else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return {"score": 0.0, "details": {"error": "no JSON object in the reply"}}
    got = str(answer.get("category", "")).strip().lower()
    return {"score": 1.0 if got == case.expected else 0.0, "details": {"category": got}}
