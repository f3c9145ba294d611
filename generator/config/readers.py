"""The tables of config.toml about the digest's readers beyond the site: their "more/less
like this" marks ([feedback]), the newsletter ([email]) and the team's chat ([chat]).

Apart from the rest of the schema in `config` (which re-exports them, so callers import them
from there) because they alone name outside services and the environment variables that hold
their credentials.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..marks import MarkLinks
from .read import ranged


@dataclass(frozen=True)
class FeedbackSettings:
    """The readers' "more like this" and "less like this" marks (`digest feedback`)."""

    github_repo: str = ""
    """The digest's repository (`owner/name`): each paper on the site offers marks that open a
    pre-filled issue there, and `digest feedback pull` reads them. Empty: no marks on the site."""
    label: str = "digest-feedback"
    """The label the site's issue links ask for (GitHub applies it where the reader may label;
    `pull` reads a mark from the title, labelled or not)."""
    github_url: str = "https://github.com"
    """The web address issues are opened at (a GitHub Enterprise server: set `GITHUB_API_URL`
    for `pull` too)."""
    email: str = ""
    """Where the mail's marks go (a `mailto:` link), for readers without a GitHub account;
    empty: the mail links the issues."""
    max_examples: int = ranged(20, 0, 200)
    """Marked papers shown to triage as examples."""
    example_chars: int = ranged(300, 50, 5000)
    """Each example's title and abstract are cut to this many characters."""

    @property
    def links(self) -> MarkLinks:
        return MarkLinks(self.github_repo, self.label, self.github_url, self.email)


@dataclass(frozen=True)
class EmailSettings:
    """The edition as a newsletter (`digest send`); off until `to` lists an address."""

    to: tuple[str, ...] = ()
    """The readers' addresses; each gets a message of their own, with only their address in
    `To`. Empty: `digest send` is off."""
    sender: str = field(default="", metadata={"key": "from"})
    """The `From` address (the TOML key is `from`)."""
    subject: str = "{title} · {edition}: {pick}"
    """The subject: `{title}`, `{edition}` and `{pick}` (the top pick's name, dropped with its
    separator when nothing was picked)."""
    smtp_host: str = ""
    """The SMTP server (`localhost` for a relay on this machine)."""
    smtp_port: int = ranged(587, 1, 65535)
    """Its port: 587 for `starttls`, 465 for `ssl`, 25 for a local relay."""
    security: str = "starttls"
    """`starttls`, `ssl` or `none` (`none` only where the path to the relay is trusted)."""
    # Names of environment variables: the password never sits in config.toml.
    username_env: str = ""
    """The environment variable holding the SMTP user name (empty: no login)."""
    password_env: str = ""
    """The environment variable holding the SMTP password: it is read from the environment only."""
    timeout_seconds: float = ranged(30.0, 1, 600)
    """Per SMTP connection and reply; the login and each message must end within four times
    it (a server that trickles its replies is cut)."""
    unsubscribe: str = ""
    """A URL or a `mailto:` for the `List-Unsubscribe` header."""

    @property
    def enabled(self) -> bool:
        return bool(self.to)


CHAT_FORMATS = ("slack", "discord", "json")


@dataclass(frozen=True)
class ChatSettings:
    """The edition in the team's chat: `digest send` posts it once to an incoming webhook (Slack,
    Discord, or anything that takes JSON); off until `webhook_url_env` is set."""

    webhook_url_env: str = ""
    """The environment variable holding the incoming webhook's URL, which is a secret: it is read
    from the environment only, and never written to a page, a record or a log. Empty: no post."""
    format: str = "slack"
    """`slack`, `discord` or `json` (the edition as a plain JSON object, for other receivers)."""
    timeout_seconds: float = ranged(30.0, 1, 600)
    """The whole post, from connecting to the last byte of the answer."""

    @property
    def enabled(self) -> bool:
        return bool(self.webhook_url_env.strip())
