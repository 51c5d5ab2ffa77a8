"""Which socket `Client()` talks to when none is named: never one planted in a directory another
user could write."""

from __future__ import annotations

import os
import tempfile
import unittest
from unittest import mock

from tokenvault.client import default_socket_path


class DefaultSocketTests(unittest.TestCase):
    def setUp(self) -> None:
        self.scratch = tempfile.TemporaryDirectory()
        self.addCleanup(self.scratch.cleanup)
        self.packaged = os.path.join(self.scratch.name, "packaged.sock")
        self.cwd = os.path.join(self.scratch.name, "cwd")
        os.makedirs(os.path.join(self.cwd, ".tokenvault", "run"), mode=0o755)
        # A stand-in for the socket: the rule looks at the directories, not at what is in them.
        open(os.path.join(self.cwd, ".tokenvault", "run", "tokenvault.sock"), "w").close()
        previous = os.getcwd()
        os.chdir(self.cwd)
        self.addCleanup(os.chdir, previous)
        environment = mock.patch.dict(os.environ, {}, clear=False)
        environment.start()
        self.addCleanup(environment.stop)
        os.environ.pop("TOKENVAULT_SOCKET", None)

    def resolve(self) -> str:
        return default_socket_path(packaged=self.packaged)

    def test_the_environment_comes_first(self) -> None:
        os.environ["TOKENVAULT_SOCKET"] = "/x/vault.sock"
        self.assertEqual(self.resolve(), "/x/vault.sock")

    def test_a_packaged_daemon_comes_before_the_current_directory(self) -> None:
        self.assertEqual(self.resolve(), os.path.join(os.getcwd(), ".tokenvault", "run", "tokenvault.sock"))
        open(self.packaged, "w").close()
        self.assertEqual(self.resolve(), self.packaged)

    def test_a_directory_others_may_write_is_refused(self) -> None:
        for directory in (".tokenvault", os.path.join(".tokenvault", "run")):
            for mode in (0o775, 0o757, 0o1777):
                with self.subTest(directory=directory, mode=oct(mode)):
                    os.chmod(directory, mode)
                    self.assertEqual(self.resolve(), self.packaged)
                    os.chmod(directory, 0o755)
        self.assertEqual(self.resolve(), os.path.join(os.getcwd(), ".tokenvault", "run", "tokenvault.sock"))

    def test_a_linked_data_directory_is_refused(self) -> None:
        os.rename(".tokenvault", "elsewhere")
        os.symlink("elsewhere", ".tokenvault")
        self.assertEqual(self.resolve(), self.packaged)

    @unittest.skipUnless(os.geteuid() == 0, "changing a directory's owner needs root")
    def test_another_users_data_directory_is_refused(self) -> None:
        os.chown(".tokenvault", 65534, 65534)
        self.assertEqual(self.resolve(), self.packaged)


if __name__ == "__main__":
    unittest.main()
