package tokenvault

import (
	"os"
	"path/filepath"
	"testing"
)

// inScratchDirectory runs the test from a new directory holding `make run`'s
// .tokenvault/run/tokenvault.sock (directories of mode 0755), with $TOKENVAULT_SOCKET unset; it
// answers the packaged path the rule is given.
func inScratchDirectory(t *testing.T) string {
	directory := t.TempDir()
	if err := os.MkdirAll(filepath.Join(directory, ".tokenvault", "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A stand-in for the socket: the rule looks at the directories, not at what is in them.
	if err := os.WriteFile(filepath.Join(directory, LocalSocketPath), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	working, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(directory); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chdir(working) })
	t.Setenv("TOKENVAULT_SOCKET", "")
	return filepath.Join(directory, "packaged.sock")
}

func TestTheEnvironmentComesFirst(t *testing.T) {
	packaged := inScratchDirectory(t)
	t.Setenv("TOKENVAULT_SOCKET", "/x/vault.sock")
	if got := defaultSocketPath(packaged); got != "/x/vault.sock" {
		t.Fatalf("got %q", got)
	}
}

func TestAPackagedDaemonComesBeforeTheCurrentDirectory(t *testing.T) {
	packaged := inScratchDirectory(t)
	local, _ := filepath.Abs(LocalSocketPath)
	if got := defaultSocketPath(packaged); got != local {
		t.Fatalf("got %q, want the local socket %q", got, local)
	}
	if err := os.WriteFile(packaged, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := defaultSocketPath(packaged); got != packaged {
		t.Fatalf("got %q, want the packaged socket", got)
	}
}

func TestADirectoryOthersMayWriteIsRefused(t *testing.T) {
	packaged := inScratchDirectory(t)
	for _, directory := range []string{".tokenvault", filepath.Join(".tokenvault", "run")} {
		for _, mode := range []os.FileMode{0o775, 0o757, 0o777 | os.ModeSticky} {
			if err := os.Chmod(directory, mode); err != nil {
				t.Fatal(err)
			}
			if got := defaultSocketPath(packaged); got != packaged {
				t.Errorf("%s at %v: got %q, want the packaged path", directory, mode, got)
			}
			if err := os.Chmod(directory, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestALinkedDataDirectoryIsRefused(t *testing.T) {
	packaged := inScratchDirectory(t)
	if err := os.Rename(".tokenvault", "elsewhere"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("elsewhere", ".tokenvault"); err != nil {
		t.Fatal(err)
	}
	if got := defaultSocketPath(packaged); got != packaged {
		t.Fatalf("got %q, want the packaged path", got)
	}
}

func TestAnotherUsersDataDirectoryIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a directory's owner needs root")
	}
	packaged := inScratchDirectory(t)
	if err := os.Chown(".tokenvault", 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if got := defaultSocketPath(packaged); got != packaged {
		t.Fatalf("got %q, want the packaged path", got)
	}
}
