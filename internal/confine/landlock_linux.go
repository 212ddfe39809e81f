package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The trampoline: a process started by Wrap applies its plan and execs
// the server before main runs (and before it could start anything else).
func init() {
	if len(os.Args) < 3 || os.Args[1] != Verb {
		return
	}
	err := trampoline(os.Args[2:])
	// Only a failure returns: the server must not run unconfined.
	fmt.Fprintf(os.Stderr, "tracebridge: the server was not started: its confinement failed: %v (set sandbox = \"off\" on its [servers.NAME] to run it unconfined)\n", err)
	os.Exit(126)
}

func trampoline(argv []string) error {
	raw, ok := os.LookupEnv(EnvSpec)
	if !ok {
		return fmt.Errorf("%s is not set", EnvSpec)
	}
	var spec Spec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return fmt.Errorf("%s: %w", EnvSpec, err)
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, EnvSpec+"=") {
			env = append(env, kv)
		}
	}
	// The restriction is per thread: this one restricts itself and execs;
	// no other thread of this process outlives the exec.
	runtime.LockOSThread()
	if err := restrict(spec, ABI()); err != nil {
		return err
	}
	return syscall.Exec(spec.Exec, argv, env)
}

// ABI is the Landlock ABI version the kernel offers (0: none: an old
// kernel, or Landlock not enabled at boot).
func ABI() int {
	abiOnce.Do(func() {
		v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
		if errno == 0 {
			abi = int(v)
		}
	})
	return abi
}

var (
	abiOnce sync.Once
	abi     int
)

// rulesetAttr is struct landlock_ruleset_attr up to ABI 6's scoped.
type rulesetAttr struct {
	handledFS, handledNet, scoped uint64
}

// pathBeneath is struct landlock_path_beneath_attr (packed: 12 bytes).
type pathBeneath struct {
	allowed  uint64
	parentFD int32
}

// netPort is struct landlock_net_port_attr.
type netPort struct {
	allowed, port uint64
}

const (
	fsRead  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	fsFile  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	fsWrite = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_REFER | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	devRW = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// handledFS is every filesystem access ABI v knows (up to v7: later ones,
// such as pathname UNIX sockets, are left to the system).
func handledFS(v int) uint64 {
	h := uint64(1<<13 - 1) // v1: execute … make_sym
	if v >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if v >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if v >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return h
}

// restrict confines the calling thread (and what it execs) to spec under
// ABI v.
func restrict(spec Spec, v int) error {
	if v < 1 {
		return errors.New("landlock is not available on this kernel")
	}
	attr := rulesetAttr{handledFS: handledFS(v)}
	if spec.Net != NetAny && v >= 4 {
		attr.handledNet = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if v >= 6 {
		attr.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	for _, p := range spec.Read {
		if err := addPath(int(fd), p, fsRead&attr.handledFS); err != nil {
			return err
		}
	}
	for _, p := range spec.Write {
		if err := addPath(int(fd), p, (fsRead|fsWrite)&attr.handledFS); err != nil {
			return err
		}
	}
	for _, p := range spec.Devices {
		if err := addPath(int(fd), p, devRW&attr.handledFS); err != nil {
			return err
		}
	}
	if attr.handledNet != 0 {
		for _, port := range spec.Ports {
			r := netPort{allowed: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
			if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, 2 /* LANDLOCK_RULE_NET_PORT */, uintptr(unsafe.Pointer(&r)), 0, 0, 0); errno != 0 {
				return fmt.Errorf("landlock_add_rule tcp %d: %w", port, errno)
			}
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(no_new_privs): %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// addPath lets the ruleset allow access beneath path (a file gets only
// the rights that apply to files). A path that is gone is skipped.
func addPath(fd int, path string, access uint64) error {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fsFile
	}
	r := pathBeneath{allowed: access, parentFD: int32(pfd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&r)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_add_rule %s: %w", path, errno)
	}
	return nil
}
