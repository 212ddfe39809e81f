package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

func runCompletion(_ context.Context, m *Main, args []string) error {
	fs := m.flags("completion")
	if err := m.parse(fs, "completion bash|zsh|fish\n\nPrints a completion script for the shell: commands, their subcommands and the\nglobal flags. Load it with, for example:\n\n  source <(tracebridge completion bash)          # ~/.bashrc\n  tracebridge completion zsh > \"${fpath[1]}/_tracebridge\"\n  tracebridge completion fish > ~/.config/fish/completions/tracebridge.fish", args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"want: completion bash|zsh|fish"}
	}
	tree := commands()
	names := slices.Sorted(maps.Keys(tree))
	cmds := strings.Join(names, " ")
	switch fs.Arg(0) {
	case "bash", "zsh":
		var cases strings.Builder
		for _, c := range names {
			if subs := tree[c].subs; len(subs) > 0 {
				fmt.Fprintf(&cases, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return;;\n", c, strings.Join(subs, " "))
			}
		}
		script := fmt.Sprintf(`# tracebridge completion (%s)
_tracebridge() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd="" i
  for ((i=1; i<COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      --data|--log-level) ((i++));;
      -*) ;;
      *) cmd=${COMP_WORDS[i]}; break;;
    esac
  done
  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W "--data --log-level --help" -- "$cur")); return; fi
  case $cmd in
    "") COMPREPLY=($(compgen -W %q -- "$cur")); return;;
%s  esac
}
`, fs.Arg(0), cmds, cases.String())
		if fs.Arg(0) == "zsh" {
			script = "#compdef tracebridge\nautoload -U +X bashcompinit && bashcompinit\n" + script
		}
		fmt.Fprint(m.Stdout, script+"complete -o default -F _tracebridge tracebridge\n")
	case "fish":
		fmt.Fprintf(m.Stdout, "# tracebridge completion (fish)\ncomplete -c tracebridge -f -n __fish_use_subcommand -a %q\n", cmds)
		fmt.Fprintln(m.Stdout, "complete -c tracebridge -l data -r -d 'data dir'\ncomplete -c tracebridge -l log-level -x -a 'debug info warn error'")
		for _, c := range names {
			if subs := tree[c].subs; len(subs) > 0 {
				fmt.Fprintf(m.Stdout, "complete -c tracebridge -f -n '__fish_seen_subcommand_from %s' -a %q\n", c, strings.Join(subs, " "))
			}
		}
	default:
		return usageError{fmt.Sprintf("completion %q: want bash, zsh or fish", fs.Arg(0))}
	}
	return nil
}
