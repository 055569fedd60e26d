package wire

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	jsoniter "github.com/json-iterator/go"
	"github.com/stretchr/testify/require"
)

// readString decodes what encoding/json decodes and refuses what it
// refuses, whether the string lies whole in json-iterator's buffer or runs
// over many refills of it, and leaves the iterator after the string.
func TestReadString(t *testing.T) {
	long := strings.Repeat("setting_00042: abcdefghijkl-mnopqrst\\n", 3000) // about 110 KB
	bodies := []string{
		`plain`,
		`tab\tnewline\nquote\"slash\/backslash\\bell\b\f\r`,
		`\u00e9t\u00C9 \u20ac \ud83d\ude00 end`,
		`lone \ud800 surrogate`,
		`\udc00 low first`,
		`\ud800\u0041 high then not low`,
		`\ud800\ud800\udc00 high then a pair`,
		`\ud800\n high then another escape`,
		`\ud800`,
		`ends in a backslash \\`,
		`\\\\\\\"`,
		`café ✓ kept`,
		long,
		strings.Repeat(`\"`, 20000),
		strings.Repeat("x", 70000),
	}
	bad := []string{
		`raw	tab`,
		"raw\nnewline",
		`bad escape \q`,
		`bad \u12g4 hex`,
		`short \u12`,
		strings.Repeat("y", 50000) + `\x`,
		strings.Repeat("y", 50000) + "\x01",
	}
	api := newJSONAPI(false, nil, nil)
	readers := map[string]func(string) *jsoniter.Iterator{
		"bytes": func(doc string) *jsoniter.Iterator { return jsoniter.ParseString(api, doc) },
	}
	for _, size := range []int{8, 64, 32 << 10} {
		readers[fmt.Sprint("stream", size)] = func(doc string) *jsoniter.Iterator {
			return jsoniter.Parse(api, strings.NewReader(doc), size)
		}
		readers[fmt.Sprint("one byte", size)] = func(doc string) *jsoniter.Iterator {
			return jsoniter.Parse(api, iotest.OneByteReader(strings.NewReader(doc)), size)
		}
	}
	for name, parse := range readers {
		t.Run(name, func(t *testing.T) {
			for _, body := range bodies {
				var want string
				require.NoError(t, json.Unmarshal([]byte(`"`+body+`"`), &want), body)
				it := parse(`["` + body + `", 7]`)
				require.True(t, it.ReadArray())
				require.Equal(t, jsoniter.StringValue, it.WhatIsNext())
				got, ok := readString(it)
				require.True(t, ok)
				require.NoError(t, it.Error, short(body))
				require.Equal(t, want, got, short(body))
				require.True(t, it.ReadArray(), "the iterator goes on after the string")
				require.Equal(t, 7, it.ReadInt())
				require.False(t, it.ReadArray())
				require.NoError(t, it.Error)
			}
			for _, body := range append(bad, long[:1000]) { // the last one unterminated
				doc := `"` + body + `"`
				if body == long[:1000] {
					doc = doc[:len(doc)-1]
				} else {
					require.Error(t, json.Unmarshal([]byte(doc), new(string)), "encoding/json refuses %s", short(body))
				}
				it := parse(doc)
				require.Equal(t, jsoniter.StringValue, it.WhatIsNext())
				if _, ok := readString(it); ok {
					require.Error(t, it.Error, short(body))
				}
			}
		})
	}
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// An iterator over a reader that never gives anything is given up on.
func TestReadStringNoProgress(t *testing.T) {
	api := newJSONAPI(false, nil, nil)
	it := jsoniter.Parse(api, io.MultiReader(strings.NewReader(`"abc`), emptyReader{}), 64)
	require.Equal(t, jsoniter.StringValue, it.WhatIsNext())
	_, ok := readString(it)
	require.True(t, ok)
	require.ErrorIs(t, it.Error, io.ErrNoProgress)
}

type emptyReader struct{}

func (emptyReader) Read([]byte) (int, error) { return 0, nil }

// FuzzReadString checks readString against encoding/json on any string
// body, read from a stream through a small buffer.
func FuzzReadString(f *testing.F) {
	for _, s := range []string{`a\"b`, `\ud83d\ude00`, `\ud800x`, `\\`, `\u00e9`, "caf\xc3\xa9"} {
		f.Add(s, uint8(8))
	}
	api := newJSONAPI(false, nil, nil)
	f.Fuzz(func(t *testing.T, body string, size uint8) {
		if !utf8.ValidString(body) { // encoding/json replaces invalid bytes; readString keeps them
			return
		}
		doc := `"` + body + `"`
		var want string
		wantErr := json.Unmarshal([]byte(doc), &want)
		it := jsoniter.Parse(api, strings.NewReader(doc+" 1"), int(size)+1)
		if it.WhatIsNext() != jsoniter.StringValue {
			return
		}
		got, ok := readString(it)
		if !ok {
			t.Fatal("not read from a stream")
		}
		switch {
		case wantErr != nil && it.Error == nil:
			// A quote inside the body ends the string early for both;
			// encoding/json then refuses the rest.
			if !strings.Contains(body, `"`) {
				t.Fatalf("accepted %q, which encoding/json refuses: %v", body, wantErr)
			}
		case wantErr == nil && it.Error != nil:
			t.Fatalf("refused %q: %v", body, it.Error)
		case wantErr == nil && got != want:
			t.Fatalf("%q: got %q, want %q", body, got, want)
		}
	})
}

// []byte values are decoded from their base64 strings as encoding/json
// decodes them, whether the string lies in the read buffer, runs past it
// or has escapes; null and arrays of numbers too.
func TestBase64BytesMatchEncodingJSON(t *testing.T) {
	type secretLike struct {
		Data map[string][]byte `json:"data"`
		One  []byte            `json:"one"`
	}
	big := make([]byte, 90<<10)
	for i := range big {
		big[i] = byte(i * 7)
	}
	bigB64, _ := json.Marshal(big)
	docs := []string{
		`{"data":{"a":"aGVsbG8=","b":"","c":null},"one":"AAEC/w=="}`,
		`{"data":{"big":` + string(bigB64) + `},"one":[1,2,255]}`,
		`{"one":"AAEC\/w=="}`,
		`{"one":"aGVs\nbG8="}`,
		`{"one":null}`,
	}
	bad := []string{`{"one":"not base64!"}`, `{"one":"aGVsbG8"}`, `{"data":{"x":"` + strings.Repeat("A", 40000) + `*"}}`}
	for _, table := range []*internTable{nil, newInternTable()} {
		api := newJSONAPI(false, table, nil)
		for _, size := range []int{64, 32 << 10} {
			for _, doc := range docs {
				var want, got secretLike
				require.NoError(t, json.Unmarshal([]byte(doc), &want), short(doc))
				it := jsoniter.Parse(api, strings.NewReader(doc), size)
				it.ReadVal(&got)
				require.NoError(t, it.Error, short(doc))
				require.Equal(t, want, got, short(doc))
			}
			for _, doc := range bad {
				require.Error(t, json.Unmarshal([]byte(doc), new(secretLike)), short(doc))
				it := jsoniter.Parse(api, strings.NewReader(doc), size)
				it.ReadVal(new(secretLike))
				require.ErrorContains(t, it.Error, "base64", short(doc))
			}
		}
	}
}
