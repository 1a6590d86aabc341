package main

import (
	"fmt"
	x "strings"
)

type S struct{}
type I interface{}

func (s *S) M(a, b int) {}
func Main(v ...string)  { fmt.Println(x.ToUpper("")) }

var Exported = 1
