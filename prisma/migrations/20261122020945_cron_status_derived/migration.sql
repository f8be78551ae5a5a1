/*
  Warnings:

  - You are about to drop the column `next_execution_status` on the `cron_jobs` table. All the data in the column will be lost.

*/
-- AlterTable
ALTER TABLE "cron_jobs" DROP COLUMN "next_execution_status";
