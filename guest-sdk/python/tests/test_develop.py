"""The development component's import of the plugin, run natively: what it says when the
plugin cannot be imported from the copy of the project's sources."""

import sys

import pytest

from kubewasm import develop


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setattr(develop, "PROJECT", str(tmp_path))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, develop.APP, raising=False)
    yield tmp_path
    sys.modules.pop(develop.APP, None)


def test_a_module_it_lacks_is_named_with_what_happens_next(project):
    (project / "app.py").write_text("import not_in_the_snapshot\n")
    with pytest.raises(ModuleNotFoundError) as raised:
        develop._app()
    assert raised.value.name == "not_in_the_snapshot"
    assert "not in kubewasm's development component" in str(raised.value)
    assert "the plugin's own component" in str(raised.value)


def test_a_missing_module_of_the_project_is_the_authors_error_as_python_says_it(project):
    (project / "app.py").write_text("import helpers\n")
    (project / "helpers").mkdir()
    (project / "helpers" / "__init__.py").write_text("import helpers.missing\n")
    with pytest.raises(ModuleNotFoundError, match="No module named 'helpers.missing'"):
        develop._app()


def test_without_the_projects_sources_it_says_only_kubewasm_dev_runs_it(project):
    with pytest.raises(RuntimeError, match="only `kubewasm dev` runs"):
        develop._app()


def test_an_app_without_a_plugin_class_is_told_to_add_one(project):
    (project / "app.py").write_text("x = 1\n")
    with pytest.raises(TypeError, match="@kubewasm.plugin"):
        develop.PluginInfo().describe()
