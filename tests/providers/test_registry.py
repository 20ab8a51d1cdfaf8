"""The provider registry (evalwh/providers/__init__.py): each built-in provider created by
name, an entry checked without needing its key, the URLs the checked entries configure, and a
provider that cannot be loaded placed at its config entry only when one is named."""

from __future__ import annotations

import pytest

from evalwh import providers
from evalwh.errors import ConfigError
from evalwh.providers.anthropic import AnthropicProvider
from evalwh.providers.openai import OpenAICompatibleProvider, OpenAIProvider
from tests.fakes.servers import (
    FakeLLMServer,
)
from tests.providers.test_http import (
    OPENAI_KEY,
    environment,  # noqa: F401  (autouse: keys, proxies, isolated secrets)
    make,
    spec_for,
)


def test_registry_creates_each_provider(server: FakeLLMServer) -> None:
    assert isinstance(make("anthropic", None), AnthropicProvider)
    assert type(make("openai", None)) is OpenAIProvider
    assert isinstance(make("openai-compatible", server.openai_url), OpenAICompatibleProvider)
    for name in ("anthropic", "openai", "openai-compatible", "command"):
        assert name in providers.available()


def test_check_accepts_good_entries() -> None:
    good = [
        spec_for("anthropic", None),
        spec_for("openai", "https://gateway.example/v1", headers={"X-Team": "evals"}),
        spec_for("openai-compatible", "http://localhost:8000/v1/"),
        spec_for("openai", None, headers={"X-Key": "${GATEWAY_KEY}"}),
    ]
    for spec in good:
        assert providers.check(spec) is None
    # ... and the entries they configure are the ones requests go to
    urls = [providers.create(spec).url for spec in good]
    assert urls[1] == "https://gateway.example/v1/chat/completions"
    assert urls[2] == "http://localhost:8000/v1/chat/completions"
    assert urls[0].startswith("https://api.anthropic.com/")
    # each differs by one detail from an entry that check refuses
    bad = [
        spec_for("openai", "gateway.example/v1"),
        spec_for("openai", None, headers={"X-Team": 3}),
        spec_for("openai-compatible", None),
        spec_for("openai", None, headers={"X-Key": OPENAI_KEY}),
    ]
    for spec in bad:
        with pytest.raises(ConfigError):
            providers.check(spec)


def test_check_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("OPENAI_API_KEY")
    for provider, env in (("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY")):
        spec = spec_for(provider, None)
        assert providers.check(spec) is None  # validation never needs the key ...
        assert providers.create(spec).key_env == env  # ... it is looked up when calling


@pytest.mark.parametrize(("where", "shown"), [("", None), ("models[2]", "models[2].provider")])
def test_a_provider_that_does_not_load_is_placed_only_when_its_entry_is_named(
    monkeypatch: pytest.MonkeyPatch, where: str, shown: str | None
) -> None:
    # asked for by name alone (no config entry to point at), the error claims no place
    import evalwh.providers as registry

    monkeypatch.setattr(registry, "available", lambda: {"ghost": "acme_missing_module:Ghost"})
    with pytest.raises(ConfigError) as info:
        registry.provider_class("ghost", where=where)
    assert info.value.where == shown
    assert info.value.message.startswith("cannot load provider 'ghost' from acme_missing_module")
