package rest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary double as an exec credential plugin: run
// with LW_TEST_PLUGIN=1 it behaves as the LW_PLUGIN_* variables say and
// exits. This is faster than building a plugin in every test.
func TestMain(m *testing.M) {
	if os.Getenv("LW_TEST_PLUGIN") == "1" {
		os.Exit(runTestPlugin())
	}
	os.Exit(m.Run())
}

// runTestPlugin is the plugin. Its variables:
//
//	LW_PLUGIN_MODE        token (default), cert, certortoken (cert while the files exist,
//	                      else token), fail, garbage, nostatus, wrongversion, leavechild
//	                      (token, and a child left holding stdout for 7 s; the child's
//	                      mode is hold)
//	LW_PLUGIN_TOKEN       the token; "-<n>" is appended, n counting the runs
//	LW_PLUGIN_COUNT_FILE  a file that gets one line per run
//	LW_PLUGIN_EXPIRY      past, future, or empty for no expiry
//	LW_PLUGIN_CERT_FILE   cert mode: the certificate and key to return
//	LW_PLUGIN_KEY_FILE
//	LW_PLUGIN_INFO_FILE   where to save KUBERNETES_EXEC_INFO and whether stdin was empty
//	LW_PLUGIN_WAIT_FIFO   a named pipe to read to its end before answering
//	LW_PLUGIN_START_FILE  a file that gets one line per run as it starts, its pid (before the fifo)
func runTestPlugin() int {
	if os.Getenv("LW_PLUGIN_MODE") == "hold" {
		time.Sleep(7 * time.Second) // a daemon the plugin started, holding its stdout
		return 0
	}
	if f := os.Getenv("LW_PLUGIN_START_FILE"); f != "" {
		old, _ := os.ReadFile(f)
		if err := os.WriteFile(f, fmt.Appendf(old, "%d\n", os.Getpid()), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if fifo := os.Getenv("LW_PLUGIN_WAIT_FIFO"); fifo != "" {
		f, err := os.Open(fifo) // blocks until the test opens it to write
		if err == nil {
			_, err = io.Copy(io.Discard, f)
			f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	runs := 1
	if f := os.Getenv("LW_PLUGIN_COUNT_FILE"); f != "" {
		old, _ := os.ReadFile(f)
		runs = strings.Count(string(old), "\n") + 1
		if err := os.WriteFile(f, append(old, "run\n"...), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	info := os.Getenv("KUBERNETES_EXEC_INFO")
	if f := os.Getenv("LW_PLUGIN_INFO_FILE"); f != "" {
		stdin, _ := io.ReadAll(os.Stdin)
		record := map[string]any{"info": json.RawMessage(info), "stdinEmpty": len(stdin) == 0}
		data, _ := json.Marshal(record)
		if err := os.WriteFile(f, data, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	var in struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal([]byte(info), &in); err != nil {
		fmt.Fprintln(os.Stderr, "KUBERNETES_EXEC_INFO is not JSON:", err)
		return 1
	}
	token := fmt.Sprintf("%s-%d", os.Getenv("LW_PLUGIN_TOKEN"), runs)
	status := map[string]any{}
	switch os.Getenv("LW_PLUGIN_EXPIRY") {
	case "past":
		status["expirationTimestamp"] = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	case "future":
		status["expirationTimestamp"] = time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	}
	out := map[string]any{"apiVersion": in.APIVersion, "kind": "ExecCredential", "status": status}

	switch os.Getenv("LW_PLUGIN_MODE") {
	case "", "token":
		status["token"] = token
	case "certortoken":
		if _, err := os.Stat(os.Getenv("LW_PLUGIN_CERT_FILE")); err != nil {
			status["token"] = token
			break
		}
		fallthrough
	case "cert":
		cert, err1 := os.ReadFile(os.Getenv("LW_PLUGIN_CERT_FILE"))
		key, err2 := os.ReadFile(os.Getenv("LW_PLUGIN_KEY_FILE"))
		if err1 != nil || err2 != nil {
			fmt.Fprintln(os.Stderr, "reading cert:", err1, err2)
			return 1
		}
		status["clientCertificateData"] = string(cert)
		status["clientKeyData"] = string(key)
	case "fail":
		// Neither the token on stdout nor what stderr says (a token, as
		// verbose plugins write) may reach the error.
		fmt.Println(token)
		fmt.Fprintln(os.Stderr, "error: no credentials for cluster xxx; refresh_token="+token)
		return 3
	case "garbage":
		fmt.Printf(`{"kind":"ExecCredential","status":{"token":%q`, token)
		return 0
	case "leavechild":
		status["token"] = token
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), "LW_PLUGIN_MODE=hold")
		child.Stdout = os.Stdout
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	case "nostatus":
		delete(out, "status")
	case "wrongversion":
		status["token"] = token
		out["apiVersion"] = "client.authentication.k8s.io/v1alpha1"
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return 1
	}
	return 0
}

// testPlugin returns an ExecConfig that runs this test binary as the
// plugin, with env as its LW_PLUGIN_* settings.
func testPlugin(t *testing.T, apiVersion string, env map[string]string) *ExecConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ExecConfig{
		Command:         exe,
		APIVersion:      apiVersion,
		InteractiveMode: ExecInteractiveNever,
		Env: []ExecEnvVar{
			{Name: "LW_TEST_PLUGIN", Value: "1"},
			// Under -race a binary that exits with 0 sleeps a second
			// first, unless told not to.
			{Name: "GORACE", Value: "atexit_sleep_ms=0"},
		},
	}
	for k, v := range env {
		cfg.Env = append(cfg.Env, ExecEnvVar{Name: k, Value: v})
	}
	return cfg
}

func countLines(t *testing.T, file string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}
