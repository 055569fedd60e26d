package cluster

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// Processes returns the ids of the running processes whose command line
// mentions the cluster's folder: etcd and kube-apiserver while they run,
// and none once Stop has returned. It reads /proc (Linux).
func (c *Cluster) Processes() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	needle := []byte(c.dir + string(filepath.Separator))
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone meanwhile, or not ours to read
		}
		if bytes.Contains(cmdline, needle) {
			pids = append(pids, pid)
		}
	}
	return pids
}
