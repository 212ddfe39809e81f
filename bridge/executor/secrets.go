package executor

import (
	"fmt"
	"strings"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
)

// broker resolves secret references (env or file) named in tracebridge.toml.
// Every value it returns is registered with the redactor first, so it is
// removed from every event, log line and error from then on.
type broker struct {
	refs     map[string]config.Secret
	getenv   func(string) string
	readFile func(string) ([]byte, error)
	redactor *events.Redactor
}

// secretOutcome is what the audit envelope keeps of one reference: never
// the value.
type secretOutcome struct {
	Name    string `json:"name"`
	Source  string `json:"source"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
}

// resolve returns the values of names, or the first reference that could
// not be resolved.
func (b *broker) resolve(names []string) (map[string]string, []secretOutcome, error) {
	values := map[string]string{}
	var outcomes []secretOutcome
	for _, name := range names {
		ref, ok := b.refs[name]
		o := secretOutcome{Name: name, Outcome: "resolved"}
		var v string
		var err error
		switch {
		case !ok:
			err = fmt.Errorf("secret %q is not defined in tracebridge.toml ([secrets.%s] with env or file)", name, name)
		case ref.Env != "":
			o.Source = "env:" + ref.Env
			if v = b.getenv(ref.Env); v == "" {
				err = fmt.Errorf("secret %q: environment variable %s is not set", name, ref.Env)
			}
		default:
			o.Source = "file:" + ref.File
			var raw []byte
			if raw, err = b.readFile(ref.File); err == nil {
				v = strings.TrimRight(string(raw), "\r\n")
				if v == "" {
					err = fmt.Errorf("secret %q: file %s is empty", name, ref.File)
				}
			} else {
				err = fmt.Errorf("secret %q: %v", name, err)
			}
		}
		if err == nil && len(v) < events.MinSecretLen {
			where := "environment variable " + ref.Env
			if ref.Env == "" {
				where = "file " + ref.File
			}
			err = fmt.Errorf("secret %q: %s holds %d bytes, too short to be redacted safely (at least %d): a value this short is not a secret — write it in the server's env as a plain value, not a ${secret:…}",
				name, where, len(v), events.MinSecretLen)
		}
		if err == nil {
			err = b.redactor.Register(v)
			if err != nil {
				err = fmt.Errorf("secret %q: %v", name, err)
			}
		}
		if err != nil {
			o.Outcome, o.Reason = "unresolved", err.Error()
			outcomes = append(outcomes, o)
			return nil, outcomes, err
		}
		values[name] = v
		outcomes = append(outcomes, o)
	}
	return values, outcomes, nil
}

// ConfiguredSecrets returns the values of the references in refs that
// resolve here; the rest are skipped (a call that needs one reports it).
func ConfiguredSecrets(refs map[string]config.Secret, getenv func(string) string, readFile func(string) ([]byte, error)) []string {
	var out []string
	for _, v := range ResolvedSecrets(refs, getenv, readFile) {
		out = append(out, v)
	}
	return out
}

// ResolvedSecrets is each reference of refs that resolves here, by name.
func ResolvedSecrets(refs map[string]config.Secret, getenv func(string) string, readFile func(string) ([]byte, error)) map[string]string {
	out, _ := CheckSecrets(refs, getenv, readFile)
	return out
}

// CheckSecrets resolves each reference of refs here: the values of those
// that resolve, and why each other does not.
func CheckSecrets(refs map[string]config.Secret, getenv func(string) string, readFile func(string) ([]byte, error)) (values map[string]string, why map[string]error) {
	b := &broker{refs: refs, getenv: getenv, readFile: readFile, redactor: events.NewRedactor(nil)}
	values, why = map[string]string{}, map[string]error{}
	for name := range refs {
		if vals, _, err := b.resolve([]string{name}); err == nil {
			values[name] = vals[name]
		} else {
			why[name] = err
		}
	}
	return values, why
}

// ResolveSecrets resolves secret references with the configuration in
// force, registering every value with the redactor before it returns (the
// gateway's upstream env and headers).
func (x *Executor) ResolveSecrets(names []string) (map[string]string, error) {
	if len(names) == 0 {
		return map[string]string{}, nil
	}
	values, _, err := x.rule.Load().broker.resolve(names)
	return values, err
}
