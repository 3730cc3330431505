import pytest

from inikit import Config, InterpolationError


def test_option_referring_to_itself():
    config = Config.from_string("[s]\nloop = ${loop}/bin\n")
    with pytest.raises(InterpolationError, match="loop"):
        config.get("s", "loop")
    assert config.get("s", "loop", raw=True) == "${loop}/bin"


def test_cycle_of_two_options():
    config = Config.from_string("[s]\na = ${b}\nb = x${a}\nok = fine\n")
    for key in ("a", "b"):
        with pytest.raises(InterpolationError):
            config.get("s", key)
    assert config.get("s", "ok") == "fine"


def test_cycle_across_sections():
    config = Config.from_string("[one]\nx = ${two:y}\n[two]\ny = ${three:z}\n[three]\nz = ${one:x}\n")
    with pytest.raises(InterpolationError):
        config.get("one", "x")


def test_cycle_through_default():
    config = Config.from_string("[DEFAULT]\nhome = ${base}/home\n[s]\nbase = ${home}/..\n")
    with pytest.raises(InterpolationError):
        config.get("s", "home")


def test_typed_getters_and_items_report_cycles():
    config = Config.from_string("[s]\nn = ${m}\nm = ${n}\n")
    with pytest.raises(InterpolationError):
        config.get_int("s", "n")
    with pytest.raises(InterpolationError):
        config.items("s")


def test_repeated_reference_is_not_a_cycle():
    config = Config.from_string("[s]\npair = ${one}-${one}\none = ${unit}\nunit = 1\n")
    assert config.get("s", "pair") == "1-1"


def test_long_chain_is_not_a_cycle():
    lines = [f"k{i} = ${{k{i + 1}}}" for i in range(60)] + ["k60 = end"]
    config = Config.from_string("[s]\n" + "\n".join(lines) + "\n")
    assert config.get("s", "k0") == "end"
