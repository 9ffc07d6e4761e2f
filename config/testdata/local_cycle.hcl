locals {
  a = "${local.b}-a"
  b = "${local.a}-b"
  c = "fine"
}

job "backup" {
  schedule = "@daily"
  command  = "echo ${local.a} ${local.c}"
}
