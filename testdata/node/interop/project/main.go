package main

func main() { greet("world") }

func greet(name string) string { return "hello " + name }
