"""A pass's pipeline element (what wsc-opt --dump-pass-pipeline prints)
spells every option, and parses back to the same pass."""

import pytest

from wsc import passes
from wsc.tools.opt import _parse_pipeline


def _other_values(pass_class) -> dict:
    """A value other than the default for each bool option and option of
    several choices."""
    values = {}
    for option in pass_class.OPTIONS:
        if option.type is bool:
            values[option.name] = not option.default
        elif len(option.choices) > 1:
            values[option.name] = next(c for c in option.choices if c != option.default)
    return values


@pytest.mark.parametrize("flag", passes.available())
@pytest.mark.parametrize("defaults", [True, False])
def test_every_pass_spells_its_options_and_parses_back(flag, defaults):
    pass_class = passes.lookup(flag)
    given = pass_class() if defaults else pass_class(**_other_values(pass_class))
    element = given.pipeline_element()
    for option in pass_class.OPTIONS:
        assert f"{option.name}=" in element, (flag, option.name)
    (parsed,) = _parse_pipeline(f"builtin.module({element})")
    assert type(parsed) is pass_class
    assert vars(parsed.options) == vars(given.options)
