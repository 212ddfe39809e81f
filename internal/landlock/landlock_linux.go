package landlock

import (
	"errors"
	"runtime"
	"sync"
	"syscall"
	"unsafe"
)

// The trampoline: a process started as ARGV0 Verb ARGV… with the plan in
// EnvSpec applies it and execs ARGV before main runs (and before most of
// the binary's packages are initialized: this package imports nothing
// that needs os, so its init runs early; the cost is one start of the
// binary, measured by BenchmarkUpstreamStart).
func init() {
	argv := cmdline()
	if len(argv) < 3 || argv[1] != Verb {
		return
	}
	err := trampoline(argv[2:])
	// Only a failure returns: the server must not run unconfined.
	msg := "tracebridge: the server was not started: its confinement failed: " + err.Error() +
		" (set sandbox = \"off\" on its [servers.NAME] to run it unconfined)\n"
	syscall.Write(2, []byte(msg))
	syscall.Exit(126)
}

// cmdline is this process's argv, read from /proc (os.Args is not set
// before package os is initialized).
func cmdline() []string {
	fd, err := syscall.Open("/proc/self/cmdline", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	var b []byte
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Read(fd, buf)
		if n <= 0 || err != nil {
			break
		}
		b = append(b, buf[:n]...)
	}
	if n := len(b); n > 0 && b[n-1] == 0 {
		b = b[:n-1]
	}
	return split(string(b), 0)
}

func trampoline(argv []string) error {
	raw, ok := syscall.Getenv(EnvSpec)
	if !ok {
		return errors.New(EnvSpec + " is not set")
	}
	rules, err := Decode(raw)
	if err != nil {
		return err
	}
	var env []string
	for _, kv := range syscall.Environ() {
		if !hasPrefix(kv, EnvSpec+"=") {
			env = append(env, kv)
		}
	}
	// The restriction is per thread: this one restricts itself and execs;
	// no other thread of this process outlives the exec.
	runtime.LockOSThread()
	if err := Restrict(rules, ABI()); err != nil {
		return err
	}
	return syscall.Exec(rules.Exec, argv, env)
}

// ABI is the Landlock ABI version the kernel offers (0: none: an old
// kernel, or Landlock not enabled at boot).
func ABI() int {
	abiOnce.Do(func() {
		v, _, errno := syscall.Syscall(sysCreateRuleset, 0, 0, createRulesetVersion)
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
	fsRead  = fsExecute | fsReadFile | fsReadDir
	fsFile  = fsExecute | fsReadFile | fsWriteFile | fsTruncate | fsIoctlDev
	fsWrite = fsWriteFile | fsRemoveDir | fsRemoveFile |
		fsMakeDir | fsMakeReg | fsMakeSock |
		fsMakeFifo | fsMakeSym | fsRefer | fsTruncate
	devRW = fsReadFile | fsWriteFile | fsTruncate | fsIoctlDev
)

// handledFS is every filesystem access ABI v knows (up to v7: later ones,
// such as pathname UNIX sockets, are left to the system).
func handledFS(v int) uint64 {
	h := uint64(1<<13 - 1) // v1: execute … make_sym
	if v >= 2 {
		h |= fsRefer
	}
	if v >= 3 {
		h |= fsTruncate
	}
	if v >= 5 {
		h |= fsIoctlDev
	}
	return h
}

// Restrict confines the calling thread (and what it execs) to rules
// under ABI v.
func Restrict(spec Rules, v int) error {
	if v < 1 {
		return errors.New("landlock is not available on this kernel")
	}
	attr := rulesetAttr{handledFS: handledFS(v)}
	if spec.Net != NetAny && v >= 4 {
		attr.handledNet = netBindTCP | netConnectTCP
	}
	if v >= 6 {
		attr.scoped = scopeAbstractUnixSocket | scopeSignal
	}
	fd, _, errno := syscall.Syscall(sysCreateRuleset, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return errors.New("landlock_create_ruleset: " + errno.Error())
	}
	defer syscall.Close(int(fd))
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
			r := netPort{allowed: netConnectTCP, port: uint64(port)}
			if _, _, errno := syscall.Syscall6(sysAddRule, fd, ruleNetPort, uintptr(unsafe.Pointer(&r)), 0, 0, 0); errno != 0 {
				return errors.New("landlock_add_rule tcp " + itoa(int(port)) + ": " + errno.Error())
			}
		}
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0); errno != 0 {
		return errors.New("prctl(no_new_privs): " + errno.Error())
	}
	if _, _, errno := syscall.Syscall(sysRestrictSelf, fd, 0, 0); errno != 0 {
		return errors.New("landlock_restrict_self: " + errno.Error())
	}
	return nil
}

// addPath lets the ruleset allow access beneath path (a file gets only
// the rights that apply to files). A path that is gone is skipped.
func addPath(fd int, path string, access uint64) error {
	pfd, err := syscall.Open(path, oPath|syscall.O_CLOEXEC, 0)
	if err != nil {
		if err == syscall.ENOENT {
			return nil
		}
		return errors.New(path + ": " + err.Error())
	}
	defer syscall.Close(pfd)
	var st syscall.Stat_t
	if err := syscall.Fstat(pfd, &st); err != nil {
		return errors.New(path + ": " + err.Error())
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		access &= fsFile
	}
	r := pathBeneath{allowed: access, parentFD: int32(pfd)}
	if _, _, errno := syscall.Syscall6(sysAddRule, uintptr(fd), rulePathBeneath, uintptr(unsafe.Pointer(&r)), 0, 0, 0); errno != 0 {
		return errors.New("landlock_add_rule " + path + ": " + errno.Error())
	}
	return nil
}
