// Package host is the workspace host, a process of its own (tracebridge
// host, up; ADR 0021): it owns the files under one root, the proposals to
// change them and the reviews about them, the editors attached to it and
// the language servers it drives, and serves them over the pipe (package
// pipe) to bridges, operators and editors.
//
// Every file operation goes through Workspace, which confines it to the root
// with os.Root (no escape by "..", absolute paths, sibling prefixes or
// symlinks, also when a directory is swapped for a symlink mid-operation),
// refuses anything but regular files with a single link, and replaces files
// by writing a temporary file beside them and renaming it. What an editor
// says (its unsaved buffers) and what a language server answers are held to
// the same confinement, and bounded.
//
// Opening a repository is not consent to run it: a language server runs
// only code the operator installed (lockdown.go: the TypeScript beside
// typescript-language-server, GOTOOLCHAIN=local, CGO_ENABLED=0, no PATH
// entry inside the workspace).
package host
