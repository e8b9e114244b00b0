package kir

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"math"
	"reflect"
	"slices"
)

// Digest returns a SHA-256 of everything p holds, every field of every
// buffer and kernel (constants' values, float bits, schedules and tilings
// included), stable across processes and builds of one version of this
// package. Programs with equal digests are equal field for field; caches of
// what backends derive from a program key on it.
func Digest(p *Program) [32]byte {
	h := sha256.New()
	digestValue(h, reflect.ValueOf(p))
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// digestValue writes v to h, each value prefixed so that no two different
// values write the same bytes.
func digestValue(h hash.Hash, v reflect.Value) {
	var buf [9]byte
	word := func(tag byte, x uint64) {
		buf[0] = tag
		binary.LittleEndian.PutUint64(buf[1:], x)
		h.Write(buf[:])
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			word('n', 0)
			return
		}
		word('p', 0)
		digestValue(h, v.Elem())
	case reflect.Struct:
		word('s', uint64(v.NumField()))
		for i := range v.NumField() {
			digestValue(h, v.Field(i))
		}
	case reflect.Slice, reflect.Array:
		word('l', uint64(v.Len()))
		for i := range v.Len() {
			digestValue(h, v.Index(i))
		}
	case reflect.String:
		word('t', uint64(v.Len()))
		h.Write([]byte(v.String()))
	case reflect.Bool:
		x := uint64(0)
		if v.Bool() {
			x = 1
		}
		word('b', x)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		word('i', uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		word('u', v.Uint())
	case reflect.Float32, reflect.Float64:
		word('f', math.Float64bits(v.Float()))
	case reflect.Map:
		// In an order of their own: each entry's digest, sorted.
		var entries [][32]byte
		for it := v.MapRange(); it.Next(); {
			e := sha256.New()
			digestValue(e, it.Key())
			digestValue(e, it.Value())
			entries = append(entries, [32]byte(e.Sum(nil)))
		}
		slices.SortFunc(entries, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
		word('m', uint64(len(entries)))
		for _, e := range entries {
			h.Write(e[:])
		}
	default: // functions and channels: no program holds one
		word('?', uint64(v.Kind()))
	}
}
