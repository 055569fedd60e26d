package wire

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// intMessage is a CRD type with Go int fields, as go-to-protobuf makes for
// types that have them. No k8s.io/api type does.
type intMessage struct {
	metav1.TypeMeta `json:",inline"`
	Count           int   `protobuf:"varint,1,opt,name=count"`
	Next            int32 `protobuf:"varint,2,opt,name=next"`
	Sizes           []int `protobuf:"varint,3,rep,name=sizes"`
	On              bool  `protobuf:"varint,4,opt,name=on"`
}

func (m *intMessage) DeepCopyObject() runtime.Object {
	c := *m
	c.Sizes = append([]int(nil), m.Sizes...)
	return &c
}

// Unmarshal decodes as generated code does: each varint through an int,
// so that where int has 32 bits, the bits above them are dropped. The line
// directive names its file generated.pb.go, which is how the compiled
// decoder recognises a generated Unmarshal, so that it takes this type.
//
//line generated.pb.go:1
func (m *intMessage) Unmarshal(data []byte) error {
	for len(data) > 0 {
		tag, n := binary.Uvarint(data)
		if n <= 0 {
			return errors.New("bad tag")
		}
		v, k := binary.Uvarint(data[n:])
		if k <= 0 || tag&7 != 0 {
			return errors.New("bad varint")
		}
		data = data[n+k:]
		switch tag >> 3 {
		case 1:
			m.Count = int(v)
		case 2:
			m.Next = int32(v)
		case 3:
			m.Sizes = append(m.Sizes, int(v))
		case 4:
			m.On = int(v) != 0
		}
	}
	return nil
}

//line proto_int_test.go:62

// The compiled decoder stores a Go int at the width of an int. It stored
// 8 bytes, which on 32-bit builds overwrote the next field (or the next
// element of an []int, and past the last one), and it read a bool from
// all 64 bits where generated code reads the low 32. Only 32-bit builds
// (GOARCH=386 in CI) can fail here.
func TestCompiledDecoderStoresIntsAtTheirWidth(t *testing.T) {
	c, err := TypedCodec[*intMessage](metav1.SchemeGroupVersion.WithKind("IntMessage"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.compiledProto {
		t.Fatal("the compiled decoder does not take intMessage: the test checks nothing")
	}
	var data []byte
	for _, f := range []struct {
		num int
		v   uint64
	}{{2, 7}, {1, 5}, {3, 1}, {3, 1<<40 | 2}, {3, 3}, {4, 1 << 40}} {
		data = append(data, varintField(f.num, f.v)...)
	}
	want := &intMessage{}
	if err := want.Unmarshal(data); err != nil {
		t.Fatal(err)
	}
	got, err := c.unmarshalProto(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("compiled: %+v\ngenerated: %+v", got, want)
	}
}
