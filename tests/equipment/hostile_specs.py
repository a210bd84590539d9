"""Model specs a caller might send to make a server call a host of its choosing.

Every spec names the port of a `CountingListener` some way (each provider's
`NAME@URL`, a bare URL, another scheme or host for the same port, credentials in the
URL, an offered spec with a URL or a space added), so a test can count whether any
request ever reached it.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conductor.methods import METHODS

PROVIDERS = ["openai:", "anthropic:", "", "OPENAI:", " openai:", "openai: "]
NAMES = st.sampled_from(["", "x", "gpt-4.1", "claude-sonnet-4-6", "o3", "demo"]) | st.text(
    "abcxyz-_.:/", max_size=8
)


def urls_to(port: int) -> st.SearchStrategy[str]:
    return st.builds(
        "{}://{}{}:{}{}".format,
        st.sampled_from(["http", "https", "HTTP"]),
        st.sampled_from(["", "user:secret@", "@"]),
        st.sampled_from(["127.0.0.1", "localhost"]),
        st.just(port),
        st.sampled_from(["/v1", "", "/", "/v1/", "/v1?x=1", "/v1#f"]),
    )


def specs_to(port: int, offered: tuple[str, ...]) -> st.SearchStrategy[str]:
    """Specs that name `port`, or are near misses of an `offered` one."""
    url = urls_to(port)
    near = st.sampled_from(offered)
    return st.one_of(
        st.builds("{}{}@{}".format, st.sampled_from(PROVIDERS), NAMES, url),
        url,
        st.builds("{}@{}".format, near, url),
        st.builds("{} ".format, near),
        st.builds("{}/".format, near),
        st.builds(" {}".format, near),
        st.builds(str.upper, near),
        st.builds("{}{}{}".format, st.text(max_size=6), url, st.text(max_size=6)),
    ).filter(lambda spec: spec not in offered)


def model_ids_to(port: int, offered: tuple[str, ...]) -> st.SearchStrategy[str]:
    """What a `conductor serve` client may put in `model`: a served id with a hostile
    model, the bare method with one, or a hostile spec alone."""
    spec = specs_to(port, offered)
    method = st.sampled_from(METHODS)
    return st.one_of(
        st.builds("conductor:{}@{}".format, method, spec),
        st.builds("conductor:{}@{}@{}".format, method, st.sampled_from(offered), spec),
        spec,
    )
