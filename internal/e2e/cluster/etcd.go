package cluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// etcd outages and disaster recovery under a running kube-apiserver: etcd
// stopped and started again on the same data dir, and etcd restored from a
// cold copy of its data dir (what `etcdutl snapshot restore` of a snapshot
// taken at that moment gives, members and cluster ID aside): resource
// versions go back in time.

func (c *Cluster) etcdDataDir() string { return filepath.Join(c.dir, "etcd-data") }

// StartEtcd starts etcd on the cluster's ports and data dir (the same ones
// across restarts) and waits until /health answers 200. It fails if etcd
// is already running.
func (c *Cluster) StartEtcd(ctx context.Context) error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return errors.New("cluster is stopped")
	}
	if c.etcd != nil {
		c.mu.Unlock()
		return errors.New("etcd is already running")
	}
	etcd, err := startProcess("etcd", filepath.Join(c.opts.Binaries, "etcd"), c.etcdArgs(), c.etcdLog())
	if err != nil {
		c.mu.Unlock()
		return err
	}
	c.etcd = etcd
	c.mu.Unlock()
	if err := c.waitReady(ctx, etcd, c.EtcdURL()+"/health", ""); err != nil {
		return fmt.Errorf("etcd did not become healthy: %w", err)
	}
	return nil
}

// StopEtcd terminates etcd gracefully (SIGTERM, then SIGKILL after 10 s)
// while kube-apiserver keeps running: its requests to etcd fail or wait
// until etcd is started again. It does nothing if etcd is not running.
func (c *Cluster) StopEtcd() error {
	c.mu.Lock()
	etcd := c.etcd
	c.etcd = nil
	c.mu.Unlock()
	if etcd == nil {
		return nil
	}
	return etcd.stop(syscall.SIGTERM, 10*time.Second)
}

// BackupEtcd copies etcd's data dir to dst, which must not exist. etcd
// must be stopped (StopEtcd): a cold copy is a consistent backup.
func (c *Cluster) BackupEtcd(dst string) error {
	if err := c.etcdStopped("BackupEtcd"); err != nil {
		return err
	}
	return copyDir(c.etcdDataDir(), dst)
}

// RestoreEtcd replaces etcd's data dir with a copy of src, a backup made
// by BackupEtcd. etcd must be stopped; once started again it serves the
// state of the backup: later writes are lost, its revision goes back.
func (c *Cluster) RestoreEtcd(src string) error {
	if err := c.etcdStopped("RestoreEtcd"); err != nil {
		return err
	}
	if err := os.RemoveAll(c.etcdDataDir()); err != nil {
		return err
	}
	return copyDir(src, c.etcdDataDir())
}

func (c *Cluster) etcdStopped(what string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.etcd != nil {
		return fmt.Errorf("%s: etcd is running; stop it first", what)
	}
	return nil
}

// copyDir copies the tree at src to dst (created, with src's modes).
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Mkdir(target, info.Mode().Perm())
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("copying %s: not a regular file", path)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// EtcdObject is one key in etcd: the apiserver's storage of one object.
type EtcdObject struct {
	Key         string // e.g. /registry/configmaps/ns/name
	ModRevision int64  // the object's resourceVersion
}

// EtcdKeys returns the keys under prefix (e.g. "/registry/configmaps/ns/")
// with their mod revisions, read from etcd directly: the truth the
// apiserver's watch cache may lag behind.
func (c *Cluster) EtcdKeys(ctx context.Context, prefix string) ([]EtcdObject, error) {
	end := []byte(prefix)
	end[len(end)-1]++
	var out struct {
		Kvs []struct {
			Key         string `json:"key"`
			ModRevision string `json:"mod_revision"`
		} `json:"kvs"`
	}
	if err := c.etcdCall(ctx, "/v3/kv/range", map[string]any{
		"key":       base64.StdEncoding.EncodeToString([]byte(prefix)),
		"range_end": base64.StdEncoding.EncodeToString(end),
		"keys_only": true,
	}, &out); err != nil {
		return nil, err
	}
	objs := make([]EtcdObject, 0, len(out.Kvs))
	for _, kv := range out.Kvs {
		key, err := base64.StdEncoding.DecodeString(kv.Key)
		if err != nil {
			return nil, fmt.Errorf("etcd key %q: %w", kv.Key, err)
		}
		rev, err := strconv.ParseInt(kv.ModRevision, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("etcd mod_revision %q: %w", kv.ModRevision, err)
		}
		objs = append(objs, EtcdObject{Key: string(key), ModRevision: rev})
	}
	return objs, nil
}
