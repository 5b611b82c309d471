package dev.edgegeonotify.inbox

import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.Assert.fail
import org.junit.Test
import org.junit.runner.RunWith
import org.junit.runners.Parameterized
import java.io.File

/** Where the repository is: `-Dinbox.root` (build.sh sets it), else the working directory up. */
internal fun repoRoot(): File {
    System.getProperty("inbox.root")?.let { return File(it) }
    var d: File? = File("").absoluteFile
    while (d != null) {
        if (File(d, "clients/conformance").isDirectory) return d
        d = d.parentFile
    }
    throw IllegalStateException("no clients/conformance above ${File("").absolutePath}")
}

/**
 * Every file of clients/conformance/vectors (the same files the TypeScript SDK passes), run
 * step by step on one fresh [InboxStore]. An op this runner does not know fails the file, so a
 * vector added for the TS SDK cannot pass here unnoticed.
 */
@RunWith(Parameterized::class)
class ConformanceTest(private val name: String, private val file: File) {
    companion object {
        @JvmStatic
        @Parameterized.Parameters(name = "{0}")
        fun files(): List<Array<Any>> {
            val dir = File(repoRoot(), "clients/conformance/vectors")
            val files = dir.listFiles { f -> f.name.endsWith(".json") }?.sortedBy { it.name }.orEmpty()
            check(files.isNotEmpty()) { "no vectors in $dir" }
            return files.map { arrayOf<Any>(it.nameWithoutExtension, it) }
        }
    }

    @Test
    fun vector() {
        val doc = parseObject(file.readText())
        var store = InboxStore()
        for ((i, step) in doc.arr("steps").objects().withIndex()) {
            val op = step.str("op")
            val where = "$name step $i ($op)"
            var dropped: Boolean? = null
            when (op) {
                "page" -> store.applyPage(Page.fromJson(step.obj("body")), step.opt("append") == true)
                "changes" -> store.applyChanges(Changes.fromJson(step.obj("body")))
                "badge" -> {
                    val badge = Badge.fromJson(step.obj("message"))
                    dropped = if (badge == null) true else !store.applyBadge(badge)
                }
                "counts" -> store.applyCounts(Counts.fromJson(step.obj("body")))
                "markOptimistic" -> store.addPending(
                    PendingOp.Mark(step.str("id"), step.str("itemKey"), Flag.of(step.str("flag")), step.boolOr("value", true), step.strOrNull("idempotencyKey") ?: step.str("id")),
                )
                "bulkOptimistic" -> store.addPending(
                    PendingOp.Bulk(step.str("id"), BulkAction.of(step.str("action")), step.strOrNull("category"), step.strOrNull("idempotencyKey") ?: step.str("id")),
                )
                "deleteOptimistic" -> store.addPending(
                    PendingOp.Delete(step.str("id"), step.str("itemKey"), step.strOrNull("idempotencyKey") ?: step.str("id")),
                )
                "markConfirmed", "bulkConfirmed", "deleteConfirmed" ->
                    assertTrue("$where: no pending ${step.opt("id")}", store.confirm(step.str("id")) != null)
                "markFailed", "bulkFailed", "deleteFailed" ->
                    assertTrue("$where: no pending ${step.opt("id")}", store.fail(step.str("id")) != null)
                "restore" -> store = InboxStore.fromPersisted(step.obj("state"))
                "roundTrip" -> store = InboxStore.fromPersisted(parseObject(store.toPersisted().toString()))
                else -> fail("$where: unknown op '$op' (update the Kotlin runner for the new vector format)")
            }
            val expect = step.objOrNull("expect") ?: continue
            check(where, store, expect, dropped)
        }
    }

    private fun check(where: String, store: InboxStore, expect: org.json.JSONObject, dropped: Boolean?) {
        val v = store.view()
        for (k in expect.keyList()) {
            val raw = expect.opt(k)
            val want = plain(raw)
            when (k) {
                "itemKeys" -> assertEquals("$where: itemKeys", want, v.items.map { it.itemKey })
                "items" -> for ((itemKey, fields) in want as Map<*, *>) {
                    val item = v.items.firstOrNull { it.itemKey == itemKey }
                        ?: throw AssertionError("$where: item $itemKey not visible (have ${v.items.map { it.itemKey }})")
                    val json = plain(item.toJson()) as Map<*, *>
                    for ((f, value) in fields as Map<*, *>) assertEquals("$where: $itemKey.$f", value, json[f])
                }
                "counts" -> assertEquals("$where: counts", Counts.fromJson(raw as org.json.JSONObject), v.counts)
                "sync" -> assertEquals("$where: sync", want, v.sync)
                "nextCursor" -> assertEquals("$where: nextCursor", want, v.nextCursor)
                "pending" -> assertEquals("$where: pending", (want as Long).toInt(), v.pending)
                "dropped" -> assertEquals("$where: dropped", want, dropped)
                else -> fail("$where: unknown expect key '$k'")
            }
        }
    }
}
