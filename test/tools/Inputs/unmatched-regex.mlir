// expected-error-re @below {{no such {{.*}} message}}
func.func @k() attributes {wsc.num_threads = 128 : i32} {
  return
}
