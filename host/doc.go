// Package host is the workspace side of tracebridge: it owns the files under
// one root, the proposals to change them and the reviews about them, and
// serves them over the pipe.
//
// Every file operation goes through Workspace, which confines it to the root
// with os.Root (no escape by "..", absolute paths, sibling prefixes or
// symlinks, also when a directory is swapped for a symlink mid-operation),
// refuses anything but regular files with a single link, and replaces files
// by writing a temporary file beside them and renaming it.
package host
