package confine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Request is what Plan needs to know of a stdio server.
type Request struct {
	// Exec is the executable the command resolved to (absolute).
	Exec string
	// Args are the command's arguments (not argv[0]).
	Args []string
	// Env is the server's environment (KEY=value).
	Env []string
	// Cwd is the server's configured working directory ("": none).
	Cwd string
	// Roots may be changed (configured roots, the client's roots).
	Roots []string
	// Read may be read beyond what Plan finds (configured).
	Read []string
	// State and Tmp are the server's own directories (made by the
	// caller), which it may change.
	State, Tmp string
	// Home is the user's home directory: never granted whole.
	Home string
	// Net and Ports are the server's network (NetAny, NetNone, NetPorts).
	Net   string
	Ports []uint16
}

// The system a server may read: programs, libraries, certificates, the
// kernel's views of itself. /etc is granted entry by entry, less secrets.
var (
	systemRead = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc", "/sys",
		"/run/systemd/resolve", "/dev/urandom", "/dev/random"}
	systemDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}
	// etcSecret are the paths under /etc no server reads: password hashes,
	// sudo rules, host keys, TLS private keys, Kerberos keys.
	etcSecret = []string{"shadow", "shadow-", "gshadow", "gshadow-", "sudoers", "sudoers.d", "security/opasswd",
		"ssl/private", "krb5.keytab", ".pwd.lock", "ssh/ssh_host_rsa_key", "ssh/ssh_host_ecdsa_key",
		"ssh/ssh_host_ed25519_key", "ssh/ssh_host_dsa_key", "credstore", "credstore.encrypted"}
	// systemDirs stay read-only even when an argument names them.
	systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/opt", "/proc", "/sys", "/dev", "/boot", "/var", "/run"}
)

// Plan is the confinement of the server r describes: the system and its
// own install read-only; its roots, its state, its tmp and the folders
// its command line or environment names read-write; its network as
// configured.
func Plan(r Request) Spec {
	s := Spec{Exec: r.Exec, Net: r.Net, Ports: r.Ports, Devices: existing(systemDevices)}
	if s.Net == "" {
		s.Net = NetAny
	}
	read := append(existing(systemRead), etcEntries("/etc", etcSecret)...)
	read = append(read, install(r.Exec, r.Home)...)
	read = append(read, toolCaches(r.Exec, r.Args, r.Home, false)...)
	write := append([]string{r.State, r.Tmp}, r.Roots...)
	write = append(write, toolCaches(r.Exec, r.Args, r.Home, true)...)
	if r.Cwd != "" {
		read = append(read, r.Cwd)
	}
	base := r.Cwd // where relative arguments are: the server's folder, else the bridge's
	if base == "" {
		base, _ = os.Getwd()
	}
	for _, a := range r.Args {
		if p := absolute(a, base); p != "" {
			read, write = named(p, r.Home, read, write, false)
		}
	}
	for _, kv := range r.Env {
		if _, v, ok := strings.Cut(kv, "="); ok && filepath.IsAbs(v) {
			read, write = named(filepath.Clean(v), r.Home, read, write, true)
		}
	}
	s.Read = tidy(append(read, r.Read...))
	s.Write = tidy(write)
	return s
}

// named grants what a path on the command line (or in the environment)
// names: a folder is a root the server may change (unless it is the
// system's or everything: then it may read it); a file lets the server
// read its package (the outermost node_modules holding it, else its
// folder), or, named by the environment, change its folder (a data file
// such as MEMORY_FILE_PATH, which may not exist yet).
func named(p, home string, read, write []string, fromEnv bool) ([]string, []string) {
	fi, err := os.Stat(p)
	switch {
	case err == nil && fi.IsDir():
		if p == "/" || p == home || under(p, systemDirs) {
			return append(read, p), write
		}
		return read, append(write, p)
	case err == nil && !fromEnv:
		return append(read, packageRoot(p, home)), write
	case fromEnv:
		dir := filepath.Dir(p)
		if d, err := os.Stat(dir); err == nil && d.IsDir() && dir != "/" && dir != home && !under(dir, systemDirs) {
			return read, append(write, dir)
		}
	}
	return read, write
}

// install is the folders holding the executable: its prefix (the folder
// above bin/), a virtualenv, or its own folder; for the path as given and
// as resolved (a venv's python is a link into the system).
func install(exe, home string) []string {
	var out []string
	paths := []string{exe}
	if real, err := filepath.EvalSymlinks(exe); err == nil && real != exe {
		paths = append(paths, real)
	}
	for _, p := range paths {
		if m := manager(p, home); m != "" {
			out = append(out, m)
			continue
		}
		dir := filepath.Dir(p)
		parent := filepath.Dir(dir)
		switch {
		case isFile(filepath.Join(parent, "pyvenv.cfg")):
			out = append(out, parent)
		case strings.Contains(p, "/node_modules/"):
			out = append(out, packageRoot(p, home))
		case filepath.Base(dir) == "bin" && parent != "/" && parent != home && parent != filepath.Join(home, ".local"):
			out = append(out, parent)
		default:
			out = append(out, dir)
		}
	}
	return out
}

// managers are the folders under the home where version managers keep
// whole toolchains (pyenv's shims run its own scripts and its Pythons).
var managers = []string{".pyenv", ".nvm", ".volta", ".asdf", ".bun", ".deno", ".rbenv", ".fnm", "go", "sdk"}

// manager is the version manager's folder holding p, if any.
func manager(p, home string) string {
	if home == "" {
		return ""
	}
	rel, ok := strings.CutPrefix(p, strings.TrimSuffix(home, "/")+"/")
	if !ok {
		return ""
	}
	top, _, _ := strings.Cut(rel, "/")
	if slices.Contains(managers, top) {
		return filepath.Join(home, top)
	}
	return ""
}

// packageRoot is the outermost node_modules folder above file (what node
// resolves its imports within), else file's folder, else file itself
// when that folder is the home or the root.
func packageRoot(file, home string) string {
	if i := strings.Index(file, "/node_modules/"); i >= 0 {
		return file[:i+len("/node_modules")]
	}
	dir := filepath.Dir(file)
	if dir == "/" || dir == home {
		return file
	}
	return dir
}

// toolCaches are the package managers' folders a server run through them
// needs: npx's cache (written), Go's build and module caches (written) for
// gopls, uv's cache (written) and its Pythons, the user's Python packages.
func toolCaches(exe string, args []string, home string, writable bool) []string {
	if home == "" {
		return nil
	}
	base := filepath.Base(exe)
	var first string
	if len(args) > 0 {
		first = filepath.Base(args[0])
	}
	is := func(names ...string) bool { return slices.Contains(names, base) || slices.Contains(names, first) }
	var out []string
	switch {
	case is("npx", "npm", "pnpm", "pnpx", "yarn", "bunx", "npx-cli.js", "npm-cli.js"):
		if writable {
			out = append(out, filepath.Join(home, ".npm"))
		} else {
			out = append(out, filepath.Join(home, ".npmrc"))
		}
	case is("gopls", "go"):
		if writable {
			out = append(out, filepath.Join(home, ".cache", "go-build"), filepath.Join(home, ".cache", "gopls"), filepath.Join(home, "go", "pkg", "mod"))
		} else {
			out = append(out, filepath.Join(home, "go"), filepath.Join(home, ".config", "go"))
		}
	case is("uv", "uvx"):
		if writable {
			out = append(out, filepath.Join(home, ".cache", "uv"))
		} else {
			out = append(out, filepath.Join(home, ".local", "share", "uv"), filepath.Join(home, ".local", "bin"))
		}
	}
	if !writable && strings.HasPrefix(base, "python") {
		out = append(out, filepath.Join(home, ".local", "lib"))
	}
	return out
}

// etcEntries is every entry of dir but the secret ones (relative paths),
// descending into the folders that hold one.
func etcEntries(dir string, secret []string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		rel := e.Name()
		if slices.Contains(secret, rel) {
			continue
		}
		var inner []string
		for _, s := range secret {
			if after, ok := strings.CutPrefix(s, rel+"/"); ok {
				inner = append(inner, after)
			}
		}
		if len(inner) > 0 && e.IsDir() {
			out = append(out, etcEntries(filepath.Join(dir, rel), inner)...)
			continue
		}
		out = append(out, filepath.Join(dir, rel))
	}
	return out
}

func absolute(arg, cwd string) string {
	if strings.HasPrefix(arg, "-") || arg == "" {
		return ""
	}
	if !filepath.IsAbs(arg) {
		if cwd == "" || !strings.ContainsRune(arg, '/') && !strings.Contains(arg, ".") {
			return ""
		}
		arg = filepath.Join(cwd, arg)
	}
	if _, err := os.Stat(arg); err != nil {
		return ""
	}
	return filepath.Clean(arg)
}

func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// under reports whether p is one of dirs or beneath one.
func under(p string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return within(p, d) })
}

// within reports whether p is dir or beneath it.
func within(p, dir string) bool {
	return dir != "" && (p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/"))
}

// tidy drops empty and repeated paths, in order.
func tidy(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
