import BenchmarkSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// nginx from Debian's packages, on 127.0.0.1 and a free port, serving the fixtures and taking PUTs under
/// `/upload/` (its DAV module writes each body to a file, so an upload is answered once all of it arrived).
/// Uploads land in memory (`/dev/shm`) when it exists: on ext4, nginx spent more CPU creating and writing the
/// files than the clients spent sending them, and that cost varied from run to run.
final class Nginx {
    let port: Int
    let uploads: URL
    private let process: ChildProcess
    /// The folder under /dev/shm holding uploads and request bodies, removed on stop.
    private let memoryFolder: URL?

    init(root: URL, fixtures: URL, workers: String) throws {
        let prefix = root.appendingPathComponent("nginx")
        let memory = URL(fileURLWithPath: "/dev/shm")
        memoryFolder =
            FileManager.default.isWritableFile(atPath: memory.path)
            ? memory.appendingPathComponent("courier-bench-\(getpid())") : nil
        let uploadRoot = memoryFolder ?? root
        uploads = uploadRoot.appendingPathComponent("uploads")
        // Same file system as the uploads, so that nginx's final step is a rename.
        let bodies = uploadRoot.appendingPathComponent("client-bodies")
        for folder in [prefix, uploads, bodies] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            // The workers may run as another user (nobody) when the harness is root.
            chmod(folder.path, 0o777)
        }
        port = try Self.freePort()
        let configuration = """
            worker_processes \(workers);
            daemon off;
            pid \(prefix.path)/nginx.pid;
            error_log \(prefix.path)/error.log warn;
            worker_rlimit_nofile 65536;
            events { worker_connections 8192; multi_accept on; }
            http {
                access_log off;
                sendfile on;
                tcp_nopush on;
                tcp_nodelay on;
                keepalive_requests 1000000;
                keepalive_timeout 120s;
                client_body_temp_path \(bodies.path);
                types { application/octet-stream bin; }
                server {
                    listen 127.0.0.1:\(port) backlog=4096;
                    root \(fixtures.path);
                    location /upload/ {
                        alias \(uploads.path)/;
                        dav_methods PUT;
                        client_max_body_size 8m;
                        client_body_buffer_size 1m;
                    }
                }
            }
            """
        let configurationFile = prefix.appendingPathComponent("nginx.conf")
        try configuration.write(to: configurationFile, atomically: true, encoding: .utf8)
        process = try ChildProcess(
            ["nginx", "-p", prefix.path, "-c", configurationFile.path, "-e", prefix.appendingPathComponent("error.log").path],
            stdout: prefix.appendingPathComponent("stdout.log").path,
            stderr: prefix.appendingPathComponent("stderr.log").path
        )
        try waitUntilListening(log: prefix.appendingPathComponent("error.log"))
    }

    func stop() {
        process.signal(SIGQUIT)
        _ = try? process.wait()
        if let memoryFolder {
            try? FileManager.default.removeItem(at: memoryFolder)
        }
    }

    /// Removes what the last run uploaded; returns how many files of `size` bytes there were.
    func takeUploads(size: Int) throws -> Int {
        let names = try FileManager.default.contentsOfDirectory(atPath: uploads.path)
        var matching = 0
        for name in names {
            let path = uploads.appendingPathComponent(name).path
            if (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue == size {
                matching += 1
            }
            try FileManager.default.removeItem(atPath: path)
        }
        return matching
    }

    private func waitUntilListening(log: URL) throws {
        for _ in 0..<100 {
            if LoopbackSocket.accepts(port: port) {
                return
            }
            usleep(50_000)
        }
        let errors = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        throw HarnessError("nginx did not listen on 127.0.0.1:\(port) within 5 s\n\(errors)")
    }

    /// A port nothing listens on right now (bound to 0, read back, closed).
    private static func freePort() throws -> Int {
        let (descriptor, port) = try LoopbackSocket.bind(listenBacklog: nil)
        close(descriptor)
        return port
    }
}
