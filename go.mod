module github.com/bootstrap-dev/bootstrap

go 1.26

require gopkg.in/yaml.v3 v3.0.1 // indirect
