"""plait-google is the example of a third-party provider: it imports only plait's public
modules (no ``plait._private`` one, no other plugin), and ``import plait`` still imports
neither it nor httpx."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import plait.models.http as http
import plait_google

PUBLIC = {
    "plait",
    "plait.errors",
    "plait.lazy",
    "plait.messages",
    "plait.models",
    "plait.models.http",
    "plait.options",
}


def test_the_plugin_imports_only_plaits_public_api() -> None:
    package = Path(plait_google.__file__).parent
    seen: set[str] = set()
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                if name == "plait" or name.startswith("plait."):
                    seen.add(name)
                    assert name in PUBLIC, f"{source.name} imports {name}"
                assert not name.startswith("plait_") or name.split(".")[0] == "plait_google", name
    assert "plait.models.http" in seen


def test_import_plait_loads_no_provider_plugin() -> None:
    code = (
        "import sys, plait, plait.models\n"
        "plait.create_agent(plait.ScriptedChatModel(['hi'])).invoke('hi')\n"
        "assert 'plait_google' not in sys.modules and 'httpx' not in sys.modules\n"
        "from plait.models import init_chat_model\n"
        "init_chat_model('google:gemini-2.5-flash', api_key='k')\n"
        "assert 'plait_google' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_redact_removes_google_shaped_keys() -> None:
    # The shape is Google's knowledge: GoogleChatModel.key_shapes, declared to the SDK when
    # the class is defined.
    assert plait_google.GoogleChatModel.key_shapes
    key = "AIza" + "Sy" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
    assert len(key) == 39
    assert http.redact(f"API key not valid: {key}.") == "API key not valid: [REDACTED]."
    assert http.redact("AIzawhatever is prose") == "AIzawhatever is prose"
