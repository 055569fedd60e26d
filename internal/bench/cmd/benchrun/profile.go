package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// profileListwatch runs each of the scenario's listwatch arms twice more,
// once with a CPU profile and once with a heap profile (apart, so that
// sampling allocations does not weigh on the CPU profile), and writes
// `go tool pprof -top` of each next to them. It returns the files written.
func profileListwatch(ctx context.Context, bin string, e *env, url string, sc scenario, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, a := range sc.arms {
		if a.lib != "listwatch" {
			continue
		}
		base := filepath.Join(dir, strings.ReplaceAll(sc.name, "/", "_")+"."+a.name)
		cpu, mem := base+".cpu.pprof", base+".mem.pprof"
		if _, err := runClient(ctx, bin, e, url, a, "-cpuprofile="+cpu); err != nil {
			return files, err
		}
		if _, err := runClient(ctx, bin, e, url, a, "-memprofile="+mem); err != nil {
			return files, err
		}
		files = append(files, cpu, mem)
		exe := filepath.Join(bin, "benchclient-listwatch")
		for _, p := range []struct {
			in, out string
			args    []string
		}{
			{cpu, base + ".cpu.top.txt", []string{"-top", "-nodecount=40"}},
			{cpu, base + ".cpu.cum.txt", []string{"-top", "-cum", "-nodecount=40"}},
			{mem, base + ".alloc.top.txt", []string{"-top", "-nodecount=40", "-sample_index=alloc_space"}},
			{mem, base + ".inuse.top.txt", []string{"-top", "-nodecount=40", "-sample_index=inuse_space"}},
		} {
			args := append([]string{"tool", "pprof"}, p.args...)
			args = append(args, exe, p.in)
			out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
			if err != nil {
				return files, fmt.Errorf("go tool pprof %s: %v\n%s", p.in, err, out)
			}
			if err := os.WriteFile(p.out, out, 0o644); err != nil {
				return files, err
			}
			files = append(files, p.out)
		}
	}
	return files, nil
}
