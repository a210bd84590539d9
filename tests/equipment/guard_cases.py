"""Requests a browser, a rebound name or a stranger may send, generated: each header
(Host, Origin, Sec-Fetch-Site, Content-Type, Authorization) either one the operator's
choices let in or one they refuse, and the status the guard must answer (guard.py's
order of checks). Shared by the tests of `serve` and of `mcp --http`."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

KEY = "guard-test-key"
PAGE = "http://127.0.0.1:5173"  # the browser origin an operator may allow


@dataclass(frozen=True)
class Part:
    """One header's value (None: not sent) and whether the operator's choices let it in."""

    value: str | None
    allowed: bool


def parts(allowed: st.SearchStrategy[str | None], refused: st.SearchStrategy[str | None]):
    return st.one_of(allowed.map(lambda v: Part(v, True)), refused.map(lambda v: Part(v, False)))


names = st.from_regex(r"[a-z][a-z0-9-]{0,15}(\.[a-z]{2,8}){0,3}", fullmatch=True)
ports = st.one_of(st.just(""), st.integers(1, 65535).map(lambda p: f":{p}"))
LOOPBACK = {"127.0.0.1", "localhost", "[::1]"}
hosts = parts(
    st.tuples(st.sampled_from(sorted(LOOPBACK)), ports).map("".join),
    st.one_of(
        # Names a DNS record may point at 127.0.0.1, and loopback-looking impostors.
        st.tuples(names.filter(lambda n: n not in LOOPBACK), ports).map("".join),
        st.sampled_from(["127.0.0.2:8000", "localhost.:8000", "127.0.0.1.nip.io", "", "[::2]:80"]),
    ),
)
origins_foreign = st.one_of(
    st.tuples(st.sampled_from(["http://", "https://"]), names, ports).map("".join),
    st.sampled_from(["null", "http://127.0.0.1:8000", "http://localhost:5173", PAGE + ".evil"]),
)
media_json = st.sampled_from(["application/json", "application/json; charset=utf-8"])
media_other = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "text/plain",  # what a CORS "simple" request may send, with no preflight
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonp",
            "text/json",
        ]
    ),
)
keys_wrong = st.one_of(
    st.none(),
    st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=40)
    .filter(lambda k: k != KEY)
    .map(lambda k: f"Bearer {k}"),
    st.sampled_from([KEY, f"Basic {KEY}", f"Bearer {KEY}x", f"Bearer {KEY.upper()}", "Bearer"]),
)
keys = parts(st.sampled_from([f"Bearer {KEY}", f"bearer {KEY}"]), keys_wrong)


@dataclass(frozen=True)
class Case:
    host: Part
    origin: Part
    fetch_site: str | None
    media: Part
    key: Part
    post: bool  # a chat request (a run), else the model list (a reply to read)
    page_allowed: bool  # whether the operator allowed PAGE

    def headers(self) -> dict[str, str]:
        sent = {
            "host": self.host.value,
            "origin": self.origin.value,
            "sec-fetch-site": self.fetch_site,
            "content-type": self.media.value,
            "authorization": self.key.value,
        }
        return {name: value for name, value in sent.items() if value is not None}

    def expected(self) -> int | None:
        """The refusal's status, by the guard's order of checks; None: let through."""
        if not self.host.allowed:
            return 421
        if not self.origin.allowed:
            return 403
        if self.origin.value is None and self.fetch_site in ("cross-site", "same-site"):
            return 403  # a browser's request whose origin was not sent
        if not self.key.allowed:
            return 401
        if self.post and not self.media.allowed:
            return 415
        return None


@st.composite
def cases(draw: st.DrawFn) -> Case:
    page_allowed = draw(st.booleans())
    origin = draw(
        st.one_of(
            st.just(Part(None, True)),
            st.just(Part(PAGE, page_allowed)),
            origins_foreign.map(lambda v: Part(v, False)),
        )
    )
    return Case(
        host=draw(hosts),
        origin=origin,
        fetch_site=draw(st.sampled_from([None, "none", "same-origin", "same-site", "cross-site"])),
        media=draw(parts(media_json, media_other)),
        key=draw(keys),
        post=draw(st.booleans()),
        page_allowed=page_allowed,
    )


ALL_ALLOWED = Case(
    Part("127.0.0.1:8000", True),
    Part(PAGE, True),
    "cross-site",
    Part("application/json", True),
    Part(f"Bearer {KEY}", True),
    post=True,
    page_allowed=True,
)
