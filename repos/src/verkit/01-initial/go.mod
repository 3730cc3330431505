module example.org/verkit

go 1.19
