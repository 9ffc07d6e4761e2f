variable "timeout" {
  default = "ten minutes"
}

defaults {
  timeout = var.timeout
}
