package dev.edgegeonotify.inbox

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.withContext
import java.io.File
import java.io.FileOutputStream
import java.io.IOException
import java.security.MessageDigest
import java.util.concurrent.ConcurrentHashMap

/**
 * Where the store keeps itself between runs: one opaque string per key (the client uses
 * `inbox.<user>`), a log of lines: a snapshot of the store, then one line per change. The client
 * [append]s a change (its cost is the change's, not the store's) and [write]s a new snapshot
 * when the log has grown past the snapshot's size (compaction). A string keeps adapters
 * trivial: a DataStore `stringPreferencesKey`, a Room row with one TEXT column, a file. See the
 * README for the Android adapters.
 */
interface InboxPersistence {
    suspend fun read(key: String): String?
    suspend fun write(key: String, value: String)
    suspend fun remove(key: String)

    /** Adds [text] at the end of what [key] holds. The default reads and rewrites the whole
     *  value: correct, but as costly as a [write]; a file or a database appends in place. */
    suspend fun append(key: String, text: String) = write(key, (read(key) ?: "") + text)
}

/** Keeps nothing across runs (tests, or an app that wants no cache). */
class MemoryPersistence : InboxPersistence {
    private val map = ConcurrentHashMap<String, StringBuilder>()
    override suspend fun read(key: String): String? = map[key]?.let { synchronized(it) { it.toString() } }
    override suspend fun write(key: String, value: String) {
        map[key] = StringBuilder(value)
    }

    override suspend fun remove(key: String) {
        map.remove(key)
    }

    override suspend fun append(key: String, text: String) {
        val sb = map.getOrPut(key) { StringBuilder() }
        synchronized(sb) { sb.append(text) }
    }
}

/**
 * The default for the JVM and Android (`File(context.filesDir, "inbox")`): one file per key in [dir] (the name is a SHA-256 of the key, so user ids
 * never reach the file system). A snapshot is written to a temporary file and renamed over the
 * old one, so a crash mid-write leaves the previous file, never half of one; a change is appended
 * (a crash mid-append leaves a torn last line, which the client ignores on its next start).
 */
class FilePersistence(private val dir: File) : InboxPersistence {
    private fun fileOf(key: String): File {
        val d = MessageDigest.getInstance("SHA-256").digest(key.toByteArray())
        return File(dir, d.joinToString("") { "%02x".format(it) } + ".json")
    }

    override suspend fun read(key: String): String? = withContext(Dispatchers.IO) {
        val f = fileOf(key)
        try {
            if (f.exists()) f.readText() else null
        } catch (e: IOException) {
            null
        }
    }

    override suspend fun write(key: String, value: String) = withContext(Dispatchers.IO) {
        dir.mkdirs()
        val target = fileOf(key)
        val tmp = File.createTempFile(target.name, ".tmp", dir)
        try {
            tmp.writeText(value)
            // rename(2) replaces the target atomically on Linux and Android (java.nio.file would
            // need API 26); where a rename cannot replace (Windows), delete first.
            if (!tmp.renameTo(target)) {
                target.delete()
                if (!tmp.renameTo(target)) throw IOException("cannot write $target")
            }
        } finally {
            tmp.delete()
        }
        Unit
    }

    override suspend fun remove(key: String) = withContext(Dispatchers.IO) {
        fileOf(key).delete()
        Unit
    }

    override suspend fun append(key: String, text: String) = withContext(Dispatchers.IO) {
        dir.mkdirs()
        FileOutputStream(fileOf(key), true).use { it.write(text.toByteArray(Charsets.UTF_8)) }
    }
}
