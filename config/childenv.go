package config

import (
	"regexp"
	"runtime"
	"slices"
)

// BaseEnv is what every stdio upstream inherits from the bridge's
// environment, as the reference TypeScript SDK's getDefaultEnvironment
// does, plus the locale and temp dir: enough to find programs and a home,
// nothing that carries a credential. Anything else an upstream needs is
// in its own env or named in its inherit_env.
var BaseEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ"}

// baseEnvWindows is BaseEnv's Windows counterpart (the TS SDK's list).
var baseEnvWindows = []string{"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PROCESSOR_ARCHITECTURE",
	"SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME", "USERPROFILE", "PROGRAMFILES"}

// envNameRE is what inherit_env may name: one variable, no pattern.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ChildEnv is the environment server name's process starts with, before
// its own env: the base variables and its inherit_env, read with getenv.
// A variable that backs a [secrets.*] entry the server does not reference
// is never passed, whatever lists it: one server never receives another's
// secret (nor the TB_* variables `servers import` creates for them).
func (c *Config) ChildEnv(name string, getenv func(string) string) []string {
	s := c.Servers[name]
	barred := c.foreignSecretVars(s)
	base := BaseEnv
	if runtime.GOOS == "windows" {
		base = baseEnvWindows
	}
	var out []string
	for _, k := range append(slices.Clone(base), s.InheritEnv...) {
		if barred[k] || slices.ContainsFunc(out, func(kv string) bool { return len(kv) > len(k) && kv[:len(k)+1] == k+"=" }) {
			continue
		}
		if v := getenv(k); v != "" {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// foreignSecretVars are the environment variables backing secrets that s
// does not reference.
func (c *Config) foreignSecretVars(s Server) map[string]bool {
	own := map[string]bool{}
	for _, n := range s.ServerSecrets() {
		own[n] = true
	}
	out := map[string]bool{}
	for n, sec := range c.Secrets {
		if sec.Env != "" && !own[n] {
			out[sec.Env] = true
		}
	}
	return out
}

func (c *Config) validateInheritEnv(key string, s Server, bad func(key, format string, args ...any)) {
	if len(s.InheritEnv) > 0 && s.URL != "" {
		bad(key+".inherit_env", "inherit_env is for command servers")
	}
	barred := c.foreignSecretVars(s)
	for _, k := range s.InheritEnv {
		switch {
		case !envNameRE.MatchString(k):
			bad(key+".inherit_env", "%q is not a variable name (name each variable; patterns are not taken)", k)
		case barred[k]:
			bad(key+".inherit_env", "%s backs a secret this server does not reference: reference it in env as ${secret:NAME} instead", k)
		}
	}
}
