package fakelw_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/listwatch/listwatch/internal/fakelw"
)

// A Source numbers its UIDs ("uid-1", ...), which the tests of other
// packages pin, unless MakeUIDs gives it another way to make them.
func TestMakeUIDs(t *testing.T) {
	newPod := func() *corev1.Pod { return &corev1.Pod{} }
	numbered := fakelw.New(newPod)
	assert.Equal(t, types.UID("uid-1"), numbered.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}}).UID)
	assert.Equal(t, types.UID("uid-2"), numbered.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b"}}).UID)

	made := fakelw.New(newPod)
	made.MakeUIDs(func() types.UID { return "made" })
	assert.Equal(t, types.UID("made"), made.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a"}}).UID)
}
