"""A python scorer: gets the model's output and the case, returns bool, float or a dict."""


def final_answer(output, case):
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    answer = lines[-1] if lines else ""
    if answer.lower().startswith("answer:"):
        answer = answer[len("answer:") :].strip()
    expected = str(case.expected).strip()
    ok = answer.rstrip(".").lower() == expected.lower()
    return {"score": 1.0 if ok else 0.0, "details": {"answer": answer, "expected": expected}}
