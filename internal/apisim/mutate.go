package apisim

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// paddingAnnotation is the annotation LargeObject fills.
const paddingAnnotation = "apisim.listwatch.dev/padding"

// encodeFor returns v's bytes in format f for the next item of the stream,
// mutated when an object-mutation fault is due. Mutations work on the
// object's JSON form and re-encode it (protobuf through the typed object):
// slow, but only for the one faulty item.
func (st *stream) encodeFor(c *collection, v *version, f format) encoded {
	e := c.encodedVersion(v, f)
	if !st.mutationDue() || st.fault.kind == mutUnknownType {
		return e
	}
	src, _ := v.partial()
	if !f.partial {
		src = v.json
	}
	var obj map[string]any
	if err := json.Unmarshal(src, &obj); err != nil {
		return e
	}
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
	}
	switch st.fault.kind {
	case mutWrongKind:
		kind := "ConfigMap"
		if c.res.Kind == "ConfigMap" {
			kind = "Secret"
		}
		obj["kind"], obj["apiVersion"], e.kind, e.apiVersion = kind, "v1", kind, "v1"
	case mutMissingName:
		delete(md, "name")
	case mutMissingMetadata:
		delete(obj, "metadata")
	case mutEmptyRV:
		delete(md, "resourceVersion")
	case mutDecreasingRV:
		md["resourceVersion"] = strconv.FormatUint(max(st.lastRV, 1)-1, 10)
	case mutInvalidRV:
		md["resourceVersion"] = "not-a-number"
	case mutLarge:
		if pad := st.fault.size - len(src); pad > 0 {
			ann, _ := md["annotations"].(map[string]any)
			if ann == nil {
				ann = map[string]any{}
				md["annotations"] = ann
			}
			ann[paddingAnnotation] = strings.Repeat("x", pad)
		}
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return e
	}
	if !f.proto {
		e.body = body
		return e
	}
	var typed runtime.Object = &metav1.PartialObjectMetadata{}
	if !f.partial {
		typed = reflect.New(c.typed.Elem()).Interface().(runtime.Object)
	}
	if err := json.Unmarshal(body, typed); err != nil {
		return e
	}
	if pb, err := typed.(protoMarshaler).Marshal(); err == nil {
		e.body = pb
	}
	return e
}

// eventTypeFor returns the type to send for the next watch event.
func (st *stream) eventTypeFor(typ string) string {
	if st.mutationDue() && st.fault.kind == mutUnknownType {
		return "UNKNOWN"
	}
	return typ
}
