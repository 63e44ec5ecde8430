"""Pre- and post-processing of the OCR example (PaddleOCR PP-OCRv4), as Kiln Python models.

The neural networks themselves (text detection, text recognition) run on Kiln's ONNX Runtime pools; these
three small models only move pixels and numbers around them, on the same node:
  DetPre  encoded image bytes (PNG/JPEG) -> the detector's normalised input tensor
  Crop    encoded image bytes + the detector's probability map -> one fixed-height crop per text box (DB
          post-processing: threshold, contours, box score, unclip, perspective crop), and the boxes
  Ctc     the recogniser's per-timestep class scores -> UTF-8 text (greedy CTC decoding with the dictionary)
Each is called with one image (or one image's crops) per request: batching: max_batch_size 1 in ocr.yaml.
"""
import os

import cv2
import numpy as np

DET_MAX_SIDE = 960          # the detector's input: longest side at most this, both sides multiples of 32
DET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
DET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
REC_HEIGHT = 48             # PP-OCRv4 recognition input height
REC_MAX_WIDTH = 1280


def decode_image(encoded):
    """One row of UINT8 (the file's bytes) -> BGR uint8 image."""
    buf = np.ascontiguousarray(encoded, dtype=np.uint8).reshape(-1)
    img = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    if img is None:
        raise ValueError("the input is not an image OpenCV can decode (PNG, JPEG, BMP, ...)")
    return img


def det_size(h, w, max_side=DET_MAX_SIDE):
    ratio = min(1.0, float(max_side) / max(h, w))
    rh = max(32, int(round(h * ratio / 32)) * 32)
    rw = max(32, int(round(w * ratio / 32)) * 32)
    return rh, rw


def det_tensor(img):
    h, w = img.shape[:2]
    rh, rw = det_size(h, w)
    x = cv2.resize(img, (rw, rh)).astype(np.float32) / 255.0
    x = (x - DET_MEAN) / DET_STD
    return x.transpose(2, 0, 1)[np.newaxis].astype(np.float32)


def order_points(pts):
    """4 points -> top-left, top-right, bottom-right, bottom-left."""
    pts = sorted(pts.tolist(), key=lambda p: p[0])
    left = sorted(pts[:2], key=lambda p: p[1])
    right = sorted(pts[2:], key=lambda p: p[1])
    return np.array([left[0], right[0], right[1], left[1]], dtype=np.float32)


def box_score(prob, contour):
    """Mean probability inside the contour (DB's box score)."""
    h, w = prob.shape
    x, y, bw, bh = cv2.boundingRect(contour)
    x0, y0, x1, y1 = max(0, x), max(0, y), min(w, x + bw), min(h, y + bh)
    if x1 <= x0 or y1 <= y0:
        return 0.0
    mask = np.zeros((y1 - y0, x1 - x0), dtype=np.uint8)
    cv2.fillPoly(mask, [contour.reshape(-1, 2) - np.array([x0, y0])], 1)
    return float(cv2.mean(prob[y0:y1, x0:x1], mask)[0])


def boxes_from_map(prob, src_h, src_w, thresh=0.3, box_thresh=0.6, unclip=1.5, min_side=3):
    """DB post-processing: the text boxes (4 points each, in source-image pixels), top to bottom, left to right."""
    ph, pw = prob.shape
    mask = (prob > thresh).astype(np.uint8)
    contours, _ = cv2.findContours(mask, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
    boxes = []
    for c in contours[:1000]:
        (cx, cy), (rw, rh), angle = cv2.minAreaRect(c)
        if min(rw, rh) < min_side or box_score(prob, c) < box_thresh:
            continue
        # Unclip: DB shrinks text regions while training; grow the box back by area * ratio / perimeter.
        d = rw * rh * unclip / (2 * (rw + rh))
        rect = ((cx, cy), (rw + 2 * d, rh + 2 * d), angle)
        if min(rect[1]) < min_side + 2:
            continue
        pts = order_points(cv2.boxPoints(rect))
        pts[:, 0] = np.clip(pts[:, 0] * src_w / pw, 0, src_w - 1)
        pts[:, 1] = np.clip(pts[:, 1] * src_h / ph, 0, src_h - 1)
        boxes.append(pts)
    # Reading order: by line (centre y within half a box height), then left to right.
    boxes.sort(key=lambda b: (b[:, 1].mean(), b[:, 0].mean()))
    lines = []
    for b in boxes:
        if lines and abs(lines[-1][-1][:, 1].mean() - b[:, 1].mean()) < (b[3, 1] - b[0, 1]) / 2:
            lines[-1].append(b)
        else:
            lines.append([b])
    return [b for line in lines for b in sorted(line, key=lambda b: b[0, 0])]


def crop(img, box):
    """The box's pixels, straightened, REC_HEIGHT high (uint8 BGR)."""
    w = int(max(np.linalg.norm(box[0] - box[1]), np.linalg.norm(box[3] - box[2])))
    h = int(max(np.linalg.norm(box[0] - box[3]), np.linalg.norm(box[1] - box[2])))
    w, h = max(w, 1), max(h, 1)
    dst = np.array([[0, 0], [w, 0], [w, h], [0, h]], dtype=np.float32)
    out = cv2.warpPerspective(img, cv2.getPerspectiveTransform(box, dst), (w, h),
                              borderMode=cv2.BORDER_REPLICATE, flags=cv2.INTER_CUBIC)
    if h / w >= 1.5:                       # a vertical box: PaddleOCR turns it to read it as a line
        out = np.rot90(out)
    return out


def rec_batch(crops):
    """Crops -> [n, 3, 48, W] float32 in [-1, 1], right-padded with zeros to the widest crop."""
    widths = [min(REC_MAX_WIDTH, max(REC_HEIGHT, int(np.ceil(REC_HEIGHT * c.shape[1] / c.shape[0]))))
              for c in crops]
    width = max(widths) if widths else REC_HEIGHT
    batch = np.zeros((len(crops), 3, REC_HEIGHT, width), dtype=np.float32)
    for i, (c, w) in enumerate(zip(crops, widths)):
        x = cv2.resize(c, (w, REC_HEIGHT)).astype(np.float32) / 255.0
        batch[i, :, :, :w] = ((x - 0.5) / 0.5).transpose(2, 0, 1)
    return batch


def sample_image():
    """A small encoded image with a dark bar on white, for warm-up (Kiln's zero tensors are not images)."""
    img = np.full((64, 256, 3), 255, dtype=np.uint8)
    img[24:40, 16:200] = 0
    return np.frombuffer(cv2.imencode(".png", img)[1].tobytes(), dtype=np.uint8)[np.newaxis]


class DetPre:
    def load(self, config, device):
        pass

    def warmup(self):
        self.predict({"image": sample_image()})

    def predict(self, inputs):
        return {"x": det_tensor(decode_image(inputs["image"][0]))}


class Crop:
    def load(self, config, device):
        self.thresh = float(config.get("thresh", 0.3))
        self.box_thresh = float(config.get("box_thresh", 0.6))
        self.unclip = float(config.get("unclip_ratio", 1.5))

    def warmup(self):
        prob = np.zeros((1, 1, 64, 256), dtype=np.float32)
        prob[0, 0, 26:38, 20:196] = 0.9
        self.predict({"image": sample_image(), "prob": prob})

    def predict(self, inputs):
        img = decode_image(inputs["image"][0])
        prob = np.asarray(inputs["prob"], dtype=np.float32)[0, 0]
        boxes = boxes_from_map(prob, img.shape[0], img.shape[1], self.thresh, self.box_thresh, self.unclip)
        crops = [crop(img, b) for b in boxes]
        # One input row (the image) -> one output row: its n crops and n boxes.
        return {"crops": rec_batch(crops)[np.newaxis],
                "boxes": np.array(boxes, dtype=np.float32).reshape(1, len(boxes), 8)}


class Ctc:
    def load(self, config, device):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), config.get("dictionary", "ppocr_keys_v1.txt"))
        with open(path, encoding="utf-8") as f:
            keys = [line.rstrip("\r\n") for line in f]
        # Class 0 is CTC's blank; then the dictionary; PP-OCR appends the space as the last class.
        self.chars = [""] + keys + [" "]

    def warmup(self):
        self.predict({"probs": np.zeros((1, 40, len(self.chars)), dtype=np.float32)})

    def predict(self, inputs):
        scores = np.asarray(inputs["probs"], dtype=np.float32)
        if scores.shape[2] != len(self.chars):
            raise ValueError("the recogniser has %d classes, the dictionary %d" % (scores.shape[2], len(self.chars)))
        best = scores.argmax(axis=2)
        texts = []
        for row in best:
            keep = np.ones(len(row), dtype=bool)
            keep[1:] = row[1:] != row[:-1]
            texts.append("".join(self.chars[i] for i in row[keep & (row != 0)]).strip().encode("utf-8"))
        return {"text": np.array(texts, dtype=object)}
