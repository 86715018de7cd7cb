"""server.json for the MCP Registry: valid, in step with pyproject, and starting the server it describes.

Validated offline against tests/registry/server-json.schema.json, this project's
transcription of the registry's published schema (its $comment names the source);
no test reaches the network.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib

import pytest
from jsonschema import Draft202012Validator, FormatChecker

import server
from tests.conftest import ROOT

SERVER_JSON = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
SCHEMA = json.loads((ROOT / "tests" / "registry" / "server-json.schema.json").read_text(encoding="utf-8"))
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def problems(document: dict) -> list[str]:
    validator = Draft202012Validator(SCHEMA, format_checker=FormatChecker())
    return [error.message for error in validator.iter_errors(document)]


def test_server_json_fits_the_registry_schema():
    Draft202012Validator.check_schema(SCHEMA)
    assert problems(SERVER_JSON) == []


def mutated(change) -> dict:
    document = copy.deepcopy(SERVER_JSON)
    change(document)
    return document


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(description="x" * 101),  # the registry caps descriptions at 100 characters
        lambda d: d.update(name="agent-capabilities"),  # a namespace and one slash
        lambda d: d.update(version="latest"),
        lambda d: d["packages"][0].update(version="^0.1.0"),  # ranges are refused
        lambda d: d["packages"][0].update(registry_type="pypi"),  # the 2025-07-09 snake_case spelling
        lambda d: d["packages"][0].pop("version"),  # a PyPI package needs its exact version
        lambda d: d["packages"][1]["transport"].update(type="http"),  # the registry says streamable-http
    ],
)
def test_the_schema_refuses_what_the_registry_refuses(change):
    assert problems(mutated(change))


def test_every_version_is_the_package_version():
    assert SERVER_JSON["version"] == PROJECT["version"]
    assert {p["version"] for p in SERVER_JSON["packages"]} == {PROJECT["version"]}


def test_the_packages_and_the_repository_are_this_project():
    assert {p["identifier"] for p in SERVER_JSON["packages"]} == {PROJECT["name"]}
    assert {p["runtimeHint"] for p in SERVER_JSON["packages"]} == {"uvx"}
    repository = SERVER_JSON["repository"]["url"]
    assert repository == PROJECT["urls"]["Repository"]
    owner = re.fullmatch(r"https://github\.com/([^/]+)/[^/]+", repository).group(1)
    assert SERVER_JSON["name"] == f"io.github.{owner}/{PROJECT['name']}"


def test_there_is_a_stdio_and_a_streamable_http_package():
    assert [p["transport"]["type"] for p in SERVER_JSON["packages"]] == ["stdio", "streamable-http"]


def argument_value(argument: dict) -> str:
    """What a registry client passes for an argument left at its defaults."""
    value = argument.get("value", argument.get("default", ""))
    for name, variable in argument.get("variables", {}).items():
        value = value.replace("{" + name + "}", variable["default"])
    return value


def command_line(package: dict) -> list[str]:
    """The arguments a registry client passes after `uvx agent-capabilities`, with defaults."""
    argv = []
    for argument in package.get("packageArguments", []):
        value = argument_value(argument)
        argv += [argument["name"], value] if argument["type"] == "named" else [value]
    return argv


def available_variables(package: dict) -> set[str]:
    """What a package's transport URL may refer to, as the registry's validator collects it.

    modelcontextprotocol/registry, ``collectAvailableVariables``: each environment
    variable's name, and each runtime or package argument's ``name`` and ``valueHint``,
    taken verbatim (so ``--port`` is available, ``port`` only as a valueHint).
    """
    names = {v["name"] for v in package.get("environmentVariables", [])}
    for argument in package.get("runtimeArguments", []) + package.get("packageArguments", []):
        names |= {argument[key] for key in ("name", "valueHint") if argument.get(key)}
    return names


def braces(text: str) -> set[str]:
    return set(re.findall(r"{([^{}]+)}", text))


@pytest.mark.parametrize("index", [0, 1])
def test_every_url_variable_names_an_argument_or_environment_variable(index):
    package = SERVER_JSON["packages"][index]
    assert braces(package["transport"].get("url", "")) <= available_variables(package)


def test_every_header_placeholder_is_one_of_the_headers_own_variables():
    """Braces a header's ``variables`` do not define are sent as they are (the schema's rule)."""
    headers = [h for p in SERVER_JSON["packages"] for h in p["transport"].get("headers", [])]
    assert headers
    for header in headers:
        assert braces(header.get("value", "")) <= set(header.get("variables", {})), header["name"]


def url_for(package: dict) -> str:
    """The transport URL with each ``{variable}`` filled from the argument that provides it."""
    url = package["transport"]["url"]
    for argument in package.get("packageArguments", []):
        for key in ("name", "valueHint"):
            if argument.get(key):
                url = url.replace("{" + argument[key] + "}", argument_value(argument))
    return url


@pytest.mark.parametrize("index", [0, 1])
def test_each_package_starts_the_server_with_options_it_accepts(monkeypatch, index):
    package = SERVER_JSON["packages"][index]
    from server import console

    started = []
    monkeypatch.setattr(server, "main", lambda argv: started.append(server.parse_arguments(argv)) or 0)
    assert console.main(command_line(package)) == 0
    [options] = started
    assert options.transport == package["transport"]["type"]
    if options.transport == "streamable-http":
        assert url_for(package) == f"http://{options.host}:{options.port}/mcp"


def test_every_environment_variable_is_one_the_server_documents():
    names = {v["name"] for p in SERVER_JSON["packages"] for v in p.get("environmentVariables", [])}
    assert names and all(name in server.ENVIRONMENT for name in names)
    [header] = SERVER_JSON["packages"][1]["transport"]["headers"]
    assert header["value"] == "Bearer {token}" and header["isSecret"] is True
    assert header["variables"]["token"]["isSecret"] is True
