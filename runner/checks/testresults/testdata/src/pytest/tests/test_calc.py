import pytest
from calc import add


def test_add():
    assert add(2, 3) == 5


def test_zero():
    assert add(0, 0) == 0


@pytest.mark.skip(reason="flaky on CI")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert add(1, 1) == 2


@pytest.mark.parametrize("a,b,want", [(0, 0, 0), (2, 3, 5)])
def test_param(a, b, want):
    assert add(a, b) == want


@pytest.fixture
def broken():
    raise RuntimeError("fixture exploded")


def test_error(broken):
    pass


class TestClass:
    def test_method(self):
        assert True

    def test_output(self):
        print("some <output> & stuff")
        assert False, "multi\nline"
