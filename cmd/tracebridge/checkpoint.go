package main

import (
	"context"
	"fmt"

	"github.com/tracebridge/tracebridge/store"
)

func runCheckpoint(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("checkpoint")
	usage := "checkpoint export FILE\n\nWrites a checkpoint of the log's head, signed with the data dir's ed25519 key,\nto FILE. Keep it where whoever can write the data dir cannot; later,\n`tracebridge verify --checkpoint FILE` proves the log still holds that head,\ncatching truncation and rollback to an older copy."
	if err := m.parse(fs, usage, args); err != nil {
		return err
	}
	if fs.NArg() != 2 || fs.Arg(0) != "export" {
		return usageError{"want: checkpoint export FILE"}
	}
	file := fs.Arg(1)
	node, err := m.openLog(ctx, "checkpoint")
	if err != nil {
		return err
	}
	defer node.Close()
	cp, err := node.Checkpoint(ctx)
	if err != nil {
		return err
	}
	if err := store.WriteCheckpoint(file, cp); err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "checkpoint of seq %d (hash %s) written to %s\n", cp.Seq, cp.Hash, file)
	return nil
}
