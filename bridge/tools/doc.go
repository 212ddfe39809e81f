// Package tools holds the tools compiled into the bridge and the loader of
// discovered tools. Every tool here is an executor.Tool: it runs only
// through the executor.
package tools
