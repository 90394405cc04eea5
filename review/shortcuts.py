"""Keyboard shortcuts of the review queue: defaults, a user's overrides, and their validation.

Keys are the `KeyboardEvent.key` names the browser reports ("a", "A", "ArrowDown", "Enter", ...).
"""

from collections import OrderedDict

ACTIONS = OrderedDict(
    [
        ("next", ("Next value", "j")),
        ("prev", ("Previous value", "k")),
        ("accept", ("Accept", "a")),
        ("edit", ("Edit (Enter saves, Escape cancels; in a list, arrows or letters pick)", "e")),
        ("reject", ("Reject", "r")),
        ("na", ("Set n/a", "n")),
        ("undo", ("Undo my last change", "u")),
        ("history", ("History of the value", "h")),
        ("export", ("Export approved values", "x")),
        ("next_page", ("Next page", "]")),
        ("prev_page", ("Previous page", "[")),
        ("help", ("Show or hide shortcuts", "?")),
    ]
)
# Keys the edit box and the browser need for themselves.
RESERVED = {"Enter", "Escape", "Tab", " ", "Shift", "Control", "Alt", "Meta"}
NAMED_KEYS = {
    "ArrowDown",
    "ArrowUp",
    "ArrowLeft",
    "ArrowRight",
    "PageDown",
    "PageUp",
    "Home",
    "End",
    "Delete",
    "Backspace",
}


class ShortcutError(ValueError):
    """Shortcuts that cannot be saved; `errors` maps each action to what is wrong with its key."""

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{ACTIONS[a][0]}: {e}" for a, e in errors.items()))


def defaults() -> dict[str, str]:
    return {action: key for action, (_, key) in ACTIONS.items()}


def effective(overrides: dict | None) -> dict[str, str]:
    """The defaults with a user's valid overrides laid over them."""
    keys = defaults()
    for action, key in (overrides or {}).items():
        if action in keys and isinstance(key, str) and key:
            keys[action] = key
    return keys


def listing(overrides: dict | None) -> list[tuple[str, str, str]]:
    """(action, label, key) rows for the page's shortcut list."""
    keys = effective(overrides)
    return [(action, label, keys[action]) for action, (label, _) in ACTIONS.items()]


def validate(submitted: dict[str, str]) -> dict[str, str]:
    """Clean the submitted keys (one per action); raises ShortcutError naming every bad one."""
    errors: dict[str, str] = {}
    cleaned: dict[str, str] = {}
    for action in ACTIONS:
        raw = submitted.get(action, "")
        key = raw if len(raw) == 1 else raw.strip()
        if not key:
            errors[action] = "choose a key"
        elif key in RESERVED:
            errors[action] = f"{key!r} is needed by the edit box and cannot be a shortcut"
        elif len(key) != 1 and key not in NAMED_KEYS:
            errors[action] = (
                f"{key!r} is not a key: use one character or one of {', '.join(sorted(NAMED_KEYS))}"
            )
        else:
            cleaned[action] = key
    seen: dict[str, str] = {}
    for action, key in cleaned.items():
        if key in seen:
            errors[action] = f"{key!r} is already the key of {ACTIONS[seen[key]][0]}"
        else:
            seen[key] = action
    if errors:
        raise ShortcutError(errors)
    return cleaned
