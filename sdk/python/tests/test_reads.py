import os

import pytest
import httpx
from conftest import BASE_URL, FIXTURES, VOICE, Recording, client

import voiced
from voiced import InsufficientScope, InvalidApiKey, InvalidRequest, NotFound, ProPlanRequired, Voiced


def test_voices_list_with_the_rate_limit_state():
    c = client()
    with c.capture() as captured:
        page = c.voices.list()
    assert page["total"] == len(page["data"])
    voice = next(v for v in page["data"] if v["name"] == VOICE)
    assert voice["id"].startswith("voice_")
    assert voice["default_engine"] == "kokoro"
    info = captured.response
    assert info.status == 200
    assert info.request_id
    assert info.rate_limit is not None
    assert info.rate_limit.policy == "read-burst"
    assert (info.rate_limit.quota, info.rate_limit.window) == (300, 60)
    assert 0 <= info.rate_limit.remaining < 300
    assert [(p.name, p.quota, p.window) for p in info.rate_limit.policies] == [
        ("writes", 600, 3600),
        ("read-burst", 300, 60),
    ]


def test_captures_list_passes_limit_and_offset():
    page = client().captures.list(limit=3, offset=0)
    assert (page["limit"], page["offset"]) == (3, 0)
    assert len(page["data"]) <= 3


def test_401_an_unknown_key_is_invalid_api_key_and_not_retried():
    rec = Recording()
    c = Voiced(
        api_key="vk_not-a-key-of-this-server", base_url=BASE_URL, http_client=httpx.Client(transport=rec)
    )
    with pytest.raises(InvalidApiKey) as err:
        c.voices.list()
    assert err.value.status == 401
    assert err.value.code == "invalid_api_key"
    assert err.value.detail
    assert err.value.request_id
    assert err.value.rate_limit is None
    assert [e["headers"]["authorization"] for e in rec.log] == ["Bearer vk_not-a-key-of-this-server"]


def test_403_insufficient_scope_names_the_scope_a_read_only_key_lacks():
    with pytest.raises(InsufficientScope) as err:
        client("read_only").speech.create(text="Hi.", voice=VOICE)
    assert err.value.status == 403
    assert err.value.required_scope == "voice:generate"
    assert err.value.instance == "/v1/speech"
    assert isinstance(err.value.body, dict) and err.value.body["code"] == "insufficient_scope"
    assert client("read_only").voices.list()["total"] >= 1


def test_403_pro_plan_required_carries_the_billing_url():
    with pytest.raises(ProPlanRequired) as err:
        client("unpaid").voices.list()
    assert isinstance(err.value, voiced.PermissionDenied)
    assert err.value.settings_url and err.value.settings_url.startswith("http")
    assert err.value.rate_limit is not None and err.value.rate_limit.policy == "read-burst"


def test_404_and_400_name_what_is_wrong():
    with pytest.raises(NotFound) as missing:
        client().generations.get("gen_0192f0c1a2b37c0d8e9f0a1b2c3d4e5f")
    assert missing.value.param is None
    with pytest.raises(InvalidRequest) as bad:
        client().captures.list(limit=0)
    assert bad.value.param == "limit"
    assert str(bad.value).startswith("400 invalid_request: ")
    with pytest.raises(InvalidRequest) as too_long:
        client().generations.get("g" * 201)
    assert too_long.value.param == "generationId"


def test_the_client_reads_the_environment_and_refuses_to_start_without_a_key(monkeypatch):
    monkeypatch.delenv("VOICED_API_KEY", raising=False)
    with pytest.raises(ValueError, match="VOICED_API_KEY"):
        Voiced(base_url=BASE_URL)
    monkeypatch.setenv("VOICED_API_KEY", FIXTURES["keys"]["main"])
    monkeypatch.setenv("VOICED_BASE_URL", f"{BASE_URL}/v1/")  # an OpenAI-style base works too
    c = Voiced()
    assert c.base_url == BASE_URL
    assert any(v["name"] == VOICE for v in c.voices.list()["data"])
    assert os.environ["VOICED_BASE_URL"].endswith("/v1/")


def test_voices_presets_and_create_once_then_conflict():
    import uuid

    presets = client("read_only").voices.presets()
    heart = next(p for p in presets["data"] if p["engine"] == "kokoro" and p["preset"] == "af_heart")
    assert heart["language"] == "en-us"
    name = f"sdk-py-{uuid.uuid4()}"
    voice = client().voices.create(name=name, engine="kokoro", preset="bf_emma")
    assert voice["language"] == "en-gb" and voice["voice_type"] == "preset"
    with pytest.raises(voiced.Conflict) as err:
        client().voices.create(name=name, engine="kokoro", preset="af_heart")
    assert err.value.status == 409 and err.value.param == "name"
    with pytest.raises(InvalidRequest) as bad:
        client().voices.create(name=f"sdk-py-{uuid.uuid4()}", engine="kokoro", preset="nova")
    assert bad.value.param == "preset"


def test_pronunciations_create_list_refuse_delete():
    import uuid

    text = f"sdk{uuid.uuid4().hex[:8]}"
    rule = client().pronunciations.create(text=text, phonemes="ˈkoʊkəɹoʊ", language="en")
    assert rule["id"].startswith("pron_") and rule["phonemes"] == "ˈkoʊkəɹoʊ"
    assert any(r["id"] == rule["id"] for r in client("read_only").pronunciations.list()["data"])
    with pytest.raises(InvalidRequest) as err:
        client().pronunciations.create(text=text, phonemes="k☃")
    assert err.value.param == "phonemes"
    with pytest.raises(TypeError):
        client().pronunciations.create(text=text)
    client().pronunciations.delete(rule["id"])
    with pytest.raises(NotFound):
        client().pronunciations.delete(rule["id"])
