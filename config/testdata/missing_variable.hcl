variable "backup_dir" {
  description = "Where dumps go."
}

job "backup" {
  schedule = "@daily"
  command  = "backup.sh ${var.backup_dir}"
}
