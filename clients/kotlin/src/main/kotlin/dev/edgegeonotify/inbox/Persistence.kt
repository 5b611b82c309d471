package dev.edgegeonotify.inbox

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.withContext
import java.io.File
import java.io.IOException
import java.security.MessageDigest
import java.util.concurrent.ConcurrentHashMap

/**
 * Where the store keeps itself between runs: one opaque JSON string per key (the client uses
 * `inbox.<user>`). A string keeps adapters trivial: a DataStore `stringPreferencesKey`, a Room
 * row with one TEXT column, SharedPreferences, a file. See the README for the Android adapters.
 */
interface InboxPersistence {
    suspend fun read(key: String): String?
    suspend fun write(key: String, value: String)
    suspend fun remove(key: String)
}

/** Keeps nothing across runs (tests, or an app that wants no cache). */
class MemoryPersistence : InboxPersistence {
    private val map = ConcurrentHashMap<String, String>()
    override suspend fun read(key: String): String? = map[key]
    override suspend fun write(key: String, value: String) {
        map[key] = value
    }

    override suspend fun remove(key: String) {
        map.remove(key)
    }
}

/**
 * The default for the JVM and Android (`File(context.filesDir, "inbox")`): one file per key in [dir] (the name is a SHA-256 of the key, so user ids
 * never reach the file system), written to a temporary file and renamed over the old one, so a
 * crash mid-write leaves the previous snapshot, never half of one.
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
}
