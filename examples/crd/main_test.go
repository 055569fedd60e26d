package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/examples/internal/demotest"
)

func TestCRD(t *testing.T) {
	lines := demotest.Run(t, run)
	event := regexp.MustCompile(`^\S+ (ADDED|MODIFIED|DELETED) +\S+/\S+ +(Ready|Resizing) +rv=\d+ spec=\{"color":"[a-z]+","size":\d+\}$`)
	for _, l := range lines {
		if event.MatchString(l) {
			return
		}
	}
	t.Errorf("no event line with the widget's phase and spec:\n%s", strings.Join(lines, "\n"))
}
