package tokenvault

import (
	"os"
	"path/filepath"
	"syscall"
)

// PackagedSocketPath is the packaged daemon's socket (the Debian package, the systemd unit).
const PackagedSocketPath = "/run/tokenvault/tokenvault.sock"

// LocalSocketPath is where `make run` puts the socket, relative to the directory it was started in.
const LocalSocketPath = ".tokenvault/run/tokenvault.sock"

// DefaultSocketPath is $TOKENVAULT_SOCKET when set, else the packaged daemon's socket when it
// exists, else ./.tokenvault/run/tokenvault.sock (what `make run` starts) when .tokenvault and
// .tokenvault/run are directories of the caller's own that no one else can write, else the
// packaged path.
//
// The current directory may be anyone's (/tmp, a shared checkout): a socket another user planted
// there would receive the tokens a program stores. The same rule is in the CLI and the Python
// and Swift clients.
func DefaultSocketPath() string {
	return defaultSocketPath(PackagedSocketPath)
}

func defaultSocketPath(packaged string) string {
	if path := os.Getenv("TOKENVAULT_SOCKET"); path != "" {
		return path
	}
	if _, err := os.Stat(packaged); err == nil {
		return packaged
	}
	if ownUnsharedDirectory(".tokenvault") && ownUnsharedDirectory(filepath.Join(".tokenvault", "run")) {
		// Absolute: a later chdir must not make the client dial an unchecked directory's socket.
		if local, err := filepath.Abs(LocalSocketPath); err == nil {
			return local
		}
	}
	return packaged
}

// ownUnsharedDirectory: a directory (not a link to one) owned by this process's user, which
// neither its group nor others may write.
func ownUnsharedDirectory(path string) bool {
	info, err := os.Lstat(path)
	if err != nil || !info.IsDir() {
		return false
	}
	status, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(status.Uid) == os.Geteuid() && info.Mode().Perm()&0o022 == 0
}
